package web

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/api"
	"github.com/chainstudio/studio/web/ops"
)

// The API's JSON is web's own: these are the exact bytes clients read for
// full records (docs/api.md), whatever the store's records look like.
func TestAPIShapesOfRecords(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc := &chain.Chain{Name: "c"}
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct{ name, got, want string }{
		{"chain", enc(api.ToChainJSON(&store.Chain{ID: "id", Name: "c", Description: "d", Version: 2, NodeCount: 3, Created: t0, Updated: t0, Doc: doc}, nil)),
			`{"id":"id","name":"c","description":"d","version":2,"node_count":3,"created":"2026-01-02T03:04:05Z","updated":"2026-01-02T03:04:05Z","published":{"version":0},"unpublished_changes":true,"mcp_exposed":false,"doc":{"name":"c","nodes":null},"issues":[],"valid":true}`},
		{"chain summaries", enc(api.ToChainSummariesJSON([]store.ChainSummary{{ID: "id", Name: "c", Version: 1, Created: t0, Updated: t0, LastRunStatus: chain.StatusFailed, LastRunAt: t0}, {ID: "b"}})),
			`[{"id":"id","name":"c","version":1,"node_count":0,"published_version":0,"created":"2026-01-02T03:04:05Z","updated":"2026-01-02T03:04:05Z","last_run_status":"failed","last_run_at":"2026-01-02T03:04:05Z"},{"id":"b","name":"","version":0,"node_count":0,"published_version":0,"created":"0001-01-01T00:00:00Z","updated":"0001-01-01T00:00:00Z"}]`},
		{"no chains", enc(api.ToChainSummariesJSON(nil)), `[]`},
		{"versions", enc(api.ToChainVersionsJSON([]store.ChainVersion{{ChainID: "id", Version: 1, Name: "c", NodeCount: 1, Message: "m", Kind: store.VersionNamed, Created: t0}})),
			`[{"chain_id":"id","version":1,"name":"c","node_count":1,"message":"m","kind":"named","created":"2026-01-02T03:04:05Z"}]`},
		{"no versions", enc(api.ToChainVersionsJSON(nil)), `[]`},
		{"run", enc(ops.RunJSON{RunFields: ops.ToRunFields(&store.Run{ID: "r", ChainID: "c", ChainVersion: 2, ChainName: "n", ParentRunID: "p", Kind: store.KindRerun,
			Input: map[string]any{"a": 1.0}, Status: chain.StatusFailed, Error: &engine.RunError{Code: "x", Message: "y"}, FinalOutput: "f",
			Outputs: map[string]any{"n0": "o"}, NodesRun: 1, Started: t0, Ended: t0.Add(time.Second), DurationMS: 1000,
			Nodes: []engine.NodeResult{{NodeID: "n0", Status: engine.PhaseDone}}}), Pending: []engine.Pending{}}),
			`{"id":"r","chain_id":"c","chain_version":2,"chain_name":"n","parent_run_id":"p","kind":"rerun","started_by":"rerun","input":{"a":1},"status":"failed","error":{"code":"x","message":"y"},"final_output":"f","outputs":{"n0":"o"},"nodes_run":1,"started":"2026-01-02T03:04:05Z","ended":"2026-01-02T03:04:06Z","duration_ms":1000,"nodes":[{"node_id":"n0","status":"done"}],"pending":[],"active":false}`},
		{"run in a list", enc(api.ToRunsJSON([]store.Run{{ID: "r", Kind: store.KindRun, Status: chain.StatusRunning, Started: t0}})),
			`[{"id":"r","kind":"run","started_by":"manual","status":"running","nodes_run":0,"started":"2026-01-02T03:04:05Z"}]`},
		{"run a webhook started", enc(api.ToRunsJSON([]store.Run{{ID: "r", Kind: store.KindRun, Status: chain.StatusRunning, Started: t0, TriggerKind: store.TriggerWebhook, TriggerID: "h"}})),
			`[{"id":"r","kind":"run","started_by":"webhook","trigger_id":"h","status":"running","nodes_run":0,"started":"2026-01-02T03:04:05Z"}]`},
		{"no runs", enc(api.ToRunsJSON(nil)), `[]`},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.got, tc.want)
		}
	}
}
