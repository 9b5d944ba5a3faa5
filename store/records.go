package store

import (
	"time"

	"github.com/chainstudio/studio/engine"
)

// The records below are plain data: no JSON tags, because nothing but the
// HTTP API writes them to clients, and the API's shapes are web's own types
// (so a record can change without changing the API).

// Chain is a saved chain at its current version.
type Chain struct {
	ID          string
	Name        string
	Description string
	Version     int
	NodeCount   int
	Created     time.Time
	Updated     time.Time
	Doc         *engine.Chain
}

// ChainSummary is one row of ListChains.
type ChainSummary struct {
	ID            string
	Name          string
	Description   string
	Version       int
	NodeCount     int
	Created       time.Time
	Updated       time.Time
	LastRunStatus engine.RunStatus
	LastRunAt     time.Time
}

// ChainFilter selects chains for ListChains.
type ChainFilter struct {
	Query  string // name substring, case-insensitive
	Limit  int    // default 50, at most 1000
	Offset int
	// After is the keyset cursor: only chains after this one in list order
	// (case-insensitive name, then id). Pages stay stable while chains are
	// added or deleted, which an offset does not.
	After *ChainKey
}

// ChainKey is a chain's place in list order.
type ChainKey struct{ Name, ID string }

// ChainVersion is one immutable saved version of a chain. Doc is nil in
// ListVersions results.
type ChainVersion struct {
	ChainID   string
	Version   int
	Name      string
	NodeCount int
	Message   string
	Kind      VersionKind
	Created   time.Time
	Doc       *engine.Chain
}

// VersionKind says how a version was made.
type VersionKind string

const (
	// VersionAutosave: the designer saved an edit by itself. Runs of these
	// are folded into one row of the history.
	VersionAutosave VersionKind = "autosave"
	// VersionNamed: a person saved the version with a name (NameVersion).
	VersionNamed VersionKind = "named"
	// VersionSave: any other write (create, update, import, restore).
	VersionSave VersionKind = "save"
)

// MaxVersionMessage bounds a version's message (bytes).
const MaxVersionMessage = 500

// Run kinds.
const (
	KindRun      = "run"
	KindResume   = "resume"
	KindRerun    = "rerun"
	KindNode     = "node" // one node run alone, its upstream data pinned
	KindSubchain = "subchain"
	KindA2E      = "a2e"
)

// Run is one run of a chain. Nodes and Outputs are filled by GetRun only
// (GetRunInfo and the lists leave them out).
type Run struct {
	ID           string
	ChainID      string // "" for ad-hoc and A2E runs
	ChainVersion int    // the exact version run; 0 when ad-hoc
	ChainName    string
	ParentRunID  string
	Kind         string
	Input        map[string]any
	Status       engine.RunStatus
	Error        *engine.RunError
	FinalOutput  any
	Outputs      map[string]any
	NodesRun     int
	Started      time.Time
	Ended        time.Time
	DurationMS   int64
	Nodes        []engine.NodeResult
}

// RunFilter selects runs for ListRuns.
type RunFilter struct {
	ChainID string           // "" = runs of every chain
	Status  engine.RunStatus // "" = any status
	Limit   int              // default 50, at most 1000
	Before  string           // cursor from a previous page; "" = newest
	After   string           // cursor of a page's first run: the page of runs just newer than it
}

// RunPage is one page of ListRunsPage: Older and Newer are the cursors of
// the neighbouring pages (for RunFilter.Before and After), "" at either end.
type RunPage struct {
	Runs  []Run
	Older string
	Newer string
}

// CodeInterruptedByRestart is the error code (engine.RunError.Code) of runs
// that were running when the studio stopped.
const CodeInterruptedByRestart = "interrupted_by_restart"

// Retention says which runs PruneRuns deletes: runs that started more than
// OlderThan ago (0: any age) and are not among the KeepPerChain newest runs of
// their chain (0: keep none by count). At least one must be set. Running and
// paused runs are never pruned; ad-hoc runs (no chain) count as one chain.
type Retention struct {
	OlderThan    time.Duration
	KeepPerChain int
}
