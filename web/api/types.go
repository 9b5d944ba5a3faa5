package api

import (
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/ops"
)

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
	MCPExposed bool         `json:"mcp_exposed"`
	Doc        *chain.Chain `json:"doc"`
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
	Issues []chain.Issue `json:"issues"`
	Valid  bool          `json:"valid"`
}

// toChainJSON is a chain with its validation findings (never nil).
func ToChainJSON(ch *store.Chain, issues []chain.Issue) chainJSON {
	if issues == nil {
		issues = []chain.Issue{}
	}
	return chainJSON{chainFields: chainFields{
		ID: ch.ID, Name: ch.Name, Description: ch.Description, Version: ch.Version,
		NodeCount: ch.NodeCount, Created: ch.Created, Updated: ch.Updated, Doc: ch.Doc, MCPExposed: ch.MCPExposed,
		Published:          publicationJSON{Version: ch.Published.Version, At: ch.Published.At, By: ch.Published.By, Message: ch.Published.Message},
		UnpublishedChanges: ch.Unpublished(),
	}, Issues: issues, Valid: !chain.HasErrors(issues)}
}

// chainSummaryJSON is one row of GET /v1/chains.
type chainSummaryJSON struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Description   string          `json:"description,omitempty"`
	Version       int             `json:"version"`
	NodeCount     int             `json:"node_count"`
	Published     int             `json:"published_version"`
	Created       time.Time       `json:"created"`
	Updated       time.Time       `json:"updated"`
	LastRunStatus chain.RunStatus `json:"last_run_status,omitempty"`
	LastRunAt     time.Time       `json:"last_run_at,omitzero"`
}

func ToChainSummariesJSON(rows []store.ChainSummary) []chainSummaryJSON {
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
	Doc       *chain.Chain      `json:"doc,omitempty"`
}

func toChainVersionJSON(v *store.ChainVersion) chainVersionJSON {
	return chainVersionJSON{
		ChainID: v.ChainID, Version: v.Version, Name: v.Name, NodeCount: v.NodeCount,
		Message: v.Message, Kind: v.Kind, Created: v.Created, Doc: v.Doc,
	}
}

func ToChainVersionsJSON(vs []store.ChainVersion) []chainVersionJSON {
	out := make([]chainVersionJSON, len(vs))
	for i := range vs {
		out[i] = toChainVersionJSON(&vs[i])
	}
	return out
}

func ToRunsJSON(runs []store.Run) []*ops.RunFields {
	out := make([]*ops.RunFields, len(runs))
	for i := range runs {
		out[i] = ops.ToRunFields(&runs[i])
	}
	return out
}
