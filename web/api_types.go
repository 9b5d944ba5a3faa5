package web

import (
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// The API's JSON shapes. They are web's own types, built from the store's
// records, so that a record can change (a new backend, a renamed field)
// without changing what clients read; docs/api.md and web/openapi.json
// describe these shapes.

// chainFields is a saved chain at its current version.
type chainFields struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Version     int       `json:"version"`
	NodeCount   int       `json:"node_count"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
	// Published is the version triggers, webhooks, runs that name no
	// version, skill calls and MCP tools run; Version is the newest (the
	// draft). UnpublishedChanges: they differ.
	Published          publicationJSON `json:"published"`
	UnpublishedChanges bool            `json:"unpublished_changes"`
	// MCPExposed: the studio's MCP server offers the chain as a tool.
	MCPExposed bool          `json:"mcp_exposed"`
	Doc        *engine.Chain `json:"doc"`
}

// publicationJSON says which version of a chain is published (0: none).
type publicationJSON struct {
	Version int       `json:"version"`
	At      time.Time `json:"at,omitzero"`
	By      string    `json:"by,omitempty"`
	Message string    `json:"message,omitempty"`
}

// chainJSON is a saved chain as the API shows it: the stored chain and,
// after a write, its validation findings.
type chainJSON struct {
	chainFields
	// Issues are the validation findings of the document (every chain
	// answer has them, see chainAnswer): a chain with errors can be saved but
	// not run.
	Issues []engine.Issue `json:"issues"`
	Valid  bool           `json:"valid"`
}

// toChainJSON is a chain with its validation findings (never nil).
func toChainJSON(ch *store.Chain, issues []engine.Issue) chainJSON {
	if issues == nil {
		issues = []engine.Issue{}
	}
	return chainJSON{chainFields: chainFields{
		ID: ch.ID, Name: ch.Name, Description: ch.Description, Version: ch.Version,
		NodeCount: ch.NodeCount, Created: ch.Created, Updated: ch.Updated, Doc: ch.Doc, MCPExposed: ch.MCPExposed,
		Published:          publicationJSON{Version: ch.Published.Version, At: ch.Published.At, By: ch.Published.By, Message: ch.Published.Message},
		UnpublishedChanges: ch.Unpublished(),
	}, Issues: issues, Valid: !engine.HasErrors(issues)}
}

// chainSummaryJSON is one row of GET /v1/chains.
type chainSummaryJSON struct {
	ID            string           `json:"id"`
	Name          string           `json:"name"`
	Description   string           `json:"description,omitempty"`
	Version       int              `json:"version"`
	NodeCount     int              `json:"node_count"`
	Published     int              `json:"published_version"`
	Created       time.Time        `json:"created"`
	Updated       time.Time        `json:"updated"`
	LastRunStatus engine.RunStatus `json:"last_run_status,omitempty"`
	LastRunAt     time.Time        `json:"last_run_at,omitzero"`
}

func toChainSummariesJSON(rows []store.ChainSummary) []chainSummaryJSON {
	out := make([]chainSummaryJSON, len(rows))
	for i, s := range rows {
		out[i] = chainSummaryJSON{
			ID: s.ID, Name: s.Name, Description: s.Description, Version: s.Version, NodeCount: s.NodeCount, Published: s.Published,
			Created: s.Created, Updated: s.Updated, LastRunStatus: s.LastRunStatus, LastRunAt: s.LastRunAt,
		}
	}
	return out
}

// chainVersionJSON is one saved version of a chain; Doc is left out of the
// version list.
type chainVersionJSON struct {
	ChainID   string            `json:"chain_id"`
	Version   int               `json:"version"`
	Name      string            `json:"name"`
	NodeCount int               `json:"node_count"`
	Message   string            `json:"message,omitempty"`
	Kind      store.VersionKind `json:"kind"`
	Created   time.Time         `json:"created"`
	Doc       *engine.Chain     `json:"doc,omitempty"`
}

func toChainVersionJSON(v *store.ChainVersion) chainVersionJSON {
	return chainVersionJSON{
		ChainID: v.ChainID, Version: v.Version, Name: v.Name, NodeCount: v.NodeCount,
		Message: v.Message, Kind: v.Kind, Created: v.Created, Doc: v.Doc,
	}
}

func toChainVersionsJSON(vs []store.ChainVersion) []chainVersionJSON {
	out := make([]chainVersionJSON, len(vs))
	for i := range vs {
		out[i] = toChainVersionJSON(&vs[i])
	}
	return out
}

// runFields is a run as the API shows it in lists, in the run page's data
// and (with more) in GET /v1/runs/{id}.
type runFields struct {
	ID           string `json:"id"`
	ChainID      string `json:"chain_id,omitempty"`      // "" for ad-hoc and A2E runs
	ChainVersion int    `json:"chain_version,omitempty"` // the exact version run; 0 when ad-hoc
	ChainName    string `json:"chain_name,omitempty"`
	ParentRunID  string `json:"parent_run_id,omitempty"`
	Kind         string `json:"kind"`
	// StartedBy says what started the run: manual (the API or the
	// designer), schedule, webhook, or the kind (rerun, node, a2e, …);
	// TriggerID names the schedule or hook.
	StartedBy   string              `json:"started_by"`
	TriggerID   string              `json:"trigger_id,omitempty"`
	Input       map[string]any      `json:"input,omitempty"`
	Status      engine.RunStatus    `json:"status"`
	Error       *engine.RunError    `json:"error,omitempty"`
	FinalOutput any                 `json:"final_output,omitempty"`
	Outputs     map[string]any      `json:"outputs,omitempty"`
	NodesRun    int                 `json:"nodes_run"`
	Started     time.Time           `json:"started"`
	Ended       time.Time           `json:"ended,omitzero"`
	DurationMS  int64               `json:"duration_ms,omitempty"`
	Nodes       []engine.NodeResult `json:"nodes,omitempty"`
}

func toRunFields(r *store.Run) *runFields {
	return &runFields{
		ID: r.ID, ChainID: r.ChainID, ChainVersion: r.ChainVersion, ChainName: r.ChainName,
		ParentRunID: r.ParentRunID, Kind: r.Kind, StartedBy: StartedBy(r), TriggerID: r.TriggerID, Input: r.Input, Status: r.Status, Error: r.Error,
		FinalOutput: r.FinalOutput, Outputs: r.Outputs, NodesRun: r.NodesRun,
		Started: r.Started, Ended: r.Ended, DurationMS: r.DurationMS, Nodes: r.Nodes,
	}
}

// StartedBy names what started a run: its trigger, else "manual" for a
// run started through the API or the designer, else its kind.
func StartedBy(r *store.Run) string {
	switch {
	case r.TriggerKind != "":
		return r.TriggerKind
	case r.Kind == store.KindRun || r.Kind == "":
		return "manual"
	}
	return r.Kind
}

func toRunsJSON(runs []store.Run) []*runFields {
	out := make([]*runFields, len(runs))
	for i := range runs {
		out[i] = toRunFields(&runs[i])
	}
	return out
}

// runJSON is a run as GET /v1/runs/{id} (and the stream's final `run`
// event) shows it.
type runJSON struct {
	*runFields
	Pending []engine.Pending `json:"pending"`
	Active  bool             `json:"active"` // executing or queued now (in this process; on PostgreSQL, in any)
	// QueuePosition is a queued run's place in line (1 is next).
	QueuePosition int `json:"queue_position,omitempty"`
	// Answers: the audit of the run's answered interrupts (who, when, from
	// where, action, value, comment), oldest first; GET /v1/runs/{id} only.
	Answers []answerJSON `json:"answers,omitempty"`
	// Doc is the chain document an ad-hoc run ran (A2E, an agent's
	// compiled chain); GET /v1/runs/{id} only. A run of a saved chain names
	// its document by chain_id and chain_version instead.
	Doc *engine.Chain `json:"doc,omitempty"`
}

// answerJSON is one audit entry of an answered interrupt.
type answerJSON struct {
	NodeID  string    `json:"node_id"`
	Action  string    `json:"action"`
	Value   any       `json:"value,omitempty"`
	Comment string    `json:"comment,omitempty"`
	By      string    `json:"by"`
	Address string    `json:"address,omitempty"`
	At      time.Time `json:"at,omitzero"`
}
