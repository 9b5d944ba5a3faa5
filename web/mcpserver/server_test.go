package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

func TestMCPToolNames(t *testing.T) {
	t.Parallel()
	chains := []store.Chain{{Name: "Fetch report"}, {Name: "fetch/report"}, {Name: "Fetch report"}, {Name: "héllo wörld!"}, {Name: "  "}, {Name: strings.Repeat("x", 200)}, {Name: "a.b-c_d"}}
	got := toolNames(chains)
	want := []string{"Fetch_report", "fetch_report", "Fetch_report_2", "h_llo_w_rld", "chain", strings.Repeat("x", 64), "a.b-c_d"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%q: tool %q, want %q", chains[i].Name, got[i], want[i])
		}
	}
}

func TestMCPInputSchema(t *testing.T) {
	t.Parallel()
	if s := inputSchema(nil); len(s) != 1 || s["type"] != "object" {
		t.Fatalf("no sample: %v", s)
	}
	s := inputSchema(map[string]any{"name": "Ada", "n": 2.0, "r": 0.5, "ok": true, "langs": []any{"en"}, "o": map[string]any{"k": "v"}, "z": nil})
	b, _ := json.Marshal(s)
	for _, want := range []string{`"name":{"type":"string"}`, `"n":{"type":"integer"}`, `"r":{"type":"number"}`, `"ok":{"type":"boolean"}`,
		`"langs":{"items":{"type":"string"},"type":"array"}`, `"o":{"properties":{"k":{"type":"string"}},"type":"object"}`, `"z":{}`, `"examples":[`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema %s lacks %s", b, want)
		}
	}
	if _, ok := s["required"]; ok {
		t.Errorf("a sample requires nothing: %s", b)
	}
}

// countingStore is a Store whose exposed chains are none, counting how
// often the tool list reads them.
type countingStore struct {
	Store // the rest is not used: a call panics
	mu    sync.Mutex
	lists int
}

func (s *countingStore) ListMCPChains(context.Context, int) ([]store.Chain, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	return nil, false, nil
}

func (s *countingStore) Load(context.Context, string) ([]engine.Checkpoint, error) { return nil, nil }

// The tool list follows the committed changes it is told of: a deletion
// and an exposure change always, a publish only of an exposed chain.
func TestToolsFollowChainChanges(t *testing.T) {
	t.Parallel()
	db := &countingStore{}
	var changes httpcore.Changes
	h := New(Config{}, db, nil, &changes)
	defer h.Stop()
	ctx := context.Background()
	for _, tc := range []struct {
		change httpcore.ChainChange
		reads  bool
	}{
		{httpcore.ChainChange{ChainID: "a", Kind: httpcore.ChainPublished}, false},
		{httpcore.ChainChange{ChainID: "a", Kind: httpcore.ChainPublished, MCPExposed: true}, true},
		{httpcore.ChainChange{ChainID: "a", Kind: httpcore.ChainDeleted}, true},
		{httpcore.ChainChange{ChainID: "a", Kind: httpcore.ChainExposure}, true},
		{httpcore.ChainChange{ChainID: "a", Kind: httpcore.ChainExposure, MCPExposed: true}, true},
	} {
		db.mu.Lock()
		before := db.lists
		db.mu.Unlock()
		changes.Publish(ctx, tc.change)
		db.mu.Lock()
		read := db.lists > before
		db.mu.Unlock()
		if read != tc.reads {
			t.Errorf("%+v: read the exposed chains %v, want %v", tc.change, read, tc.reads)
		}
	}
}
