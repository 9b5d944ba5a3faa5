// Package store holds Chain Studio's records (chains and their immutable
// versions, runs, per-node results, events, checkpoint logs), the errors a
// store returns (Error and its codes), and the interfaces a storage backend
// implements. It holds no storage of its own: store/sqlite is the backend the
// studio ships, and store/storetest is the contract suite every backend
// passes.
//
// Callers (web, views, the run service) depend on these interfaces and
// records only; cmd/studio opens a backend and passes it in.
package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// ChainStore keeps chains and their version history. Versions are immutable:
// every write adds one, and restoring an old version adds a copy of it.
type ChainStore interface {
	// CreateChain stores doc as version 1 of a new chain named doc.Name,
	// published when publish is set (else nothing is published); a name in
	// use is a *ConflictError.
	CreateChain(ctx context.Context, doc *chain.Chain, message string, publish bool) (*Chain, error)
	// SaveChain stores doc as a new version of chain id. baseVersion is the
	// version the edit started from: when the chain has moved on since,
	// nothing is written and a *VersionConflictError carries the current
	// version. A document equal to the current version's (its stored
	// form) writes nothing and returns the chain at its current version.
	SaveChain(ctx context.Context, id string, baseVersion int, doc *chain.Chain, message string) (*Chain, error)
	// SaveChainAs is SaveChain recording how the version was made.
	SaveChainAs(ctx context.Context, id string, baseVersion int, doc *chain.Chain, message string, kind VersionKind) (*Chain, error)
	// GetChain returns a live chain at its current version.
	GetChain(ctx context.Context, id string) (*Chain, error)
	// GetPublishedChain returns a live chain with Doc and Version at its
	// published version (ErrNotFound wrapped in a *NotPublishedError when
	// none is published).
	GetPublishedChain(ctx context.Context, id string) (*Chain, error)
	// PublishChain makes version v (0: the current one) the published
	// version, recording who published it and why. baseVersion, when not 0,
	// must still be the current version (else a *VersionConflictError).
	PublishChain(ctx context.Context, id string, v, baseVersion int, by, message string) (*Chain, error)
	// GetChainByName returns the live chain with the given name.
	GetChainByName(ctx context.Context, name string) (*Chain, error)
	// ResolveChain returns the current document of the live chain named
	// name: the lookup the engine uses for sub-chains (skill nodes).
	ResolveChain(ctx context.Context, name string) (*chain.Chain, error)
	// ListChains lists live chains by name, with the status of each one's
	// latest run, and the total number of chains matching the filter (the
	// whole list, whatever page f.After starts).
	ListChains(ctx context.Context, f ChainFilter) ([]ChainSummary, int, error)
	// DeleteChain soft-deletes a chain: it leaves lists and lookups and its
	// name becomes free; its versions and runs are kept. baseVersion, when
	// not 0, must still be the current version (else a *VersionConflictError).
	DeleteChain(ctx context.Context, id string, baseVersion int) error
	// ListVersions lists a chain's versions newest first, without documents
	// (deleted chains too, so that old runs can show their chain).
	ListVersions(ctx context.Context, id string) ([]ChainVersion, error)
	// GetVersion returns one version of a chain with its document. The
	// store compares nothing: callers diff two versions' documents with
	// engine/inspect.
	GetVersion(ctx context.Context, id string, v int) (*ChainVersion, error)
	// RestoreVersion saves the content of version v as a new version;
	// baseVersion, when not 0, must still be the current version (else a
	// *VersionConflictError).
	RestoreVersion(ctx context.Context, id string, v, baseVersion int, message string) (*Chain, error)
	// NameVersion saves the current document again as a new version named
	// message (VersionNamed); baseVersion, when not 0, must still be the
	// current version (else a *VersionConflictError).
	NameVersion(ctx context.Context, id string, baseVersion int, message string) (*Chain, error)
	// SetChainMCP marks a live chain as offered (or not) as a tool by the
	// studio's MCP server; it makes no version. ErrNotFound for no live chain.
	SetChainMCP(ctx context.Context, id string, exposed bool) error
	// ListMCPChains returns the live chains offered as MCP tools, with their
	// current documents, by name; at most limit of them (and whether there
	// were more).
	ListMCPChains(ctx context.Context, limit int) ([]Chain, bool, error)
}

// RunStore keeps runs. A run's node results are not stored apart: they are
// folded from its checkpoint log with the engine's fold.
type RunStore interface {
	// CreateRun records a run before the engine starts it (status defaults
	// to running, Kind to "run", Started to now). When the run already
	// exists (its first checkpoint or event got there first), its metadata
	// is filled in from r.
	CreateRun(ctx context.Context, r Run) (*Run, error)
	// GetRun returns a run with its node results and outputs.
	GetRun(ctx context.Context, id string) (*Run, error)
	// GetRunInfo returns a run without node results and outputs, at a cost
	// that does not grow with the run.
	GetRunInfo(ctx context.Context, id string) (*Run, error)
	// GetRunNode returns what one node of a run did; nil when the node has
	// not finished or paused.
	GetRunNode(ctx context.Context, runID, nodeID string) (*engine.NodeResult, error)
	// ListRuns lists runs newest first; next is the cursor of the following
	// page, "" after the last one.
	ListRuns(ctx context.Context, f RunFilter) (runs []Run, next string, err error)
	// ListRunsPage lists one page of runs with the cursors of its
	// neighbours.
	ListRunsPage(ctx context.Context, f RunFilter) (RunPage, error)
}

// EventStore keeps each run's events, in seq order.
type EventStore interface {
	// AppendEvents stores events in one write. A run's events come in
	// increasing seq order after every seq already stored for it; anything
	// else is an *EventSeqError and nothing is written.
	AppendEvents(ctx context.Context, events []engine.Event) error
	// EventsAfter returns up to limit events of a run with seq > afterSeq,
	// in seq order (limit <= 0: 1000).
	EventsAfter(ctx context.Context, runID string, afterSeq int64, limit int) ([]engine.Event, error)
	// EventsAfterBytes is EventsAfter that also stops once about maxBytes
	// of stored events were read (maxBytes <= 0: by count only), so that a
	// reader of large events holds about maxBytes (plus one stored batch),
	// not limit of them.
	EventsAfterBytes(ctx context.Context, runID string, afterSeq int64, limit int, maxBytes int64) ([]engine.Event, error)
	// MaxSeq returns the highest stored event seq of a run (0 when none).
	MaxSeq(ctx context.Context, runID string) (int64, error)
	// NewEventWriter starts a buffered writer of events into this store.
	// Close it before closing the store.
	NewEventWriter(opts EventWriterOptions) EventWriter
}

// EventWriter is the engine's event sink into a store: Emit only buffers, and
// the events are written in batches in the background, in emit order.
type EventWriter interface {
	engine.EventSink
	engine.Flusher
	// Close writes what is buffered and stops the writer.
	Close() error
	// Dropped counts events given up on after repeated write failures.
	Dropped() uint64
}

// RunFlusher is what an EventWriter may also do (the shared one does):
// FlushRun waits like Flush, then reports with an *EventsLostError whether
// events of runID were given up on since the last FlushRun for it (and
// forgets them). Another run's losses are not its error, nor consumed.
type RunFlusher interface {
	FlushRun(ctx context.Context, runID string) error
}

// BufferReader is what an EventWriter may also do (the shared one does):
// Buffered appends to dst, in seq order, the events of runID after seq
// after that it was given but has not stored yet. A reader that takes them
// before it reads the store (MergeBuffered) sees every event emitted before
// it, without waiting for the writer (Flush).
type BufferReader interface {
	Buffered(runID string, after int64, dst []engine.Event) []engine.Event
}

// MergeBuffered is a read of a run's events after seq after: stored, what
// the store gave (up to limit, perhaps fewer for its byte bound), then the
// events buffered (BufferReader.Buffered) that follow them, up to limit in
// all. buffered must be taken before the store was read: an event is then
// in one or the other (or both, once its batch was committed in between),
// so the merge has no gap. When the stored page stops before the buffered
// events start, more are stored: they come first, with the next read.
func MergeBuffered(stored, buffered []engine.Event, after int64, limit int) []engine.Event {
	if limit <= 0 {
		limit = 1000
	}
	last := after
	if n := len(stored); n > 0 {
		last = stored[n-1].Seq
	}
	i := 0
	for i < len(buffered) && buffered[i].Seq <= last {
		i++
	}
	rest := buffered[i:]
	if len(rest) == 0 || len(stored) >= limit || (len(stored) > 0 && rest[0].Seq != last+1) {
		return stored
	}
	// An empty stored page with a gap before the buffered events: the
	// events of the gap were given up on (EventsLostError); the store has
	// no more to give.
	return append(stored, rest[:min(len(rest), limit-len(stored))]...)
}

// EventsLostError says that Events events of a run could not be stored
// after repeated attempts (Err is the last write error): the run's
// stored history is incomplete.
type EventsLostError struct {
	RunID  string
	Events uint64
	Err    error
}

func (e *EventsLostError) Error() string {
	return fmt.Sprintf("%d events of run %s could not be stored: %v", e.Events, e.RunID, e.Err)
}

func (e *EventsLostError) Unwrap() error { return e.Err }

// EventWriterOptions configure an EventWriter. The zero value is usable.
type EventWriterOptions struct {
	BatchSize  int           // write as soon as this many events are buffered; default 256
	Interval   time.Duration // otherwise write buffered events after at most this long; default 20ms
	MaxRetries int           // attempts to write one batch before giving up on it; default 5
	Logger     *slog.Logger  // default: the store's logger
}

// CheckpointStore keeps each run's checkpoint log: engine.Checkpointer
// (Append, Load, ClaimInterrupt), the log a resume replays.
type CheckpointStore interface {
	engine.Checkpointer
}

// InterruptStore reads the pending interrupts of paused runs: the approval
// inbox, and the deadlines and escalations the sweeper acts on. Answering
// one goes through the checkpoint log (engine.Checkpointer.ClaimInterrupt).
type InterruptStore interface {
	// ListInterrupts lists the pending interrupts of paused runs by f.
	ListInterrupts(ctx context.Context, f InterruptFilter) ([]Interrupt, error)
	// DueInterrupts lists up to limit pending interrupts of paused runs
	// whose deadline is at or before now, oldest deadline first.
	DueInterrupts(ctx context.Context, now time.Time, limit int) ([]Interrupt, error)
	// DueEscalations lists up to limit pending interrupts of paused runs
	// whose escalation webhook has a notification due at now: "paused"
	// (never sent) or "deadline_near" (notify_at passed, never sent).
	DueEscalations(ctx context.Context, now time.Time, limit int) ([]Escalation, error)
	// ClaimEscalation marks one notification sent at now; it reports false
	// when another caller (another process) claimed it first.
	ClaimEscalation(ctx context.Context, runID string, n int64, stage string, now time.Time) (bool, error)
	// Answers returns the audit entries of a run's answered interrupts
	// (its resume entries with a value), oldest first.
	Answers(ctx context.Context, runID string) ([]engine.ResumeRecord, error)
}

// Escalation stages.
const (
	EscalationPaused       = "paused"
	EscalationDeadlineNear = "deadline_near"
)

// InterruptSort orders the inbox.
const (
	SortWaiting  = "waiting"  // longest waiting first
	SortDeadline = "deadline" // nearest deadline first, those without last
)

// InterruptFilter selects pending interrupts. Limit is bounded by the backend
// (1..MaxInterruptsPage, default 50).
type InterruptFilter struct {
	ChainID string // runs of this chain
	RunID   string // this run's
	Text    string // substring of the prompt, chain name or node id (case-insensitive)
	Sort    string // SortWaiting (default) or SortDeadline
	Limit   int
}

// MaxInterruptsPage bounds one inbox page.
const MaxInterruptsPage = 200

// Interrupt is one pending interrupt of a paused run.
type Interrupt struct {
	RunID     string               `json:"run_id"`
	N         int64                `json:"-"` // its entry in the run's log
	NodeID    string               `json:"node_id"`
	ChainID   string               `json:"chain_id,omitempty"`
	ChainName string               `json:"chain_name"`
	Prompt    any                  `json:"prompt,omitempty"`
	Approval  *engine.ApprovalInfo `json:"-"`
	Since     time.Time            `json:"waiting_since"`
	Deadline  time.Time            `json:"deadline,omitzero"`
}

// Escalation is a notification due to an interrupt's escalation webhook.
type Escalation struct {
	Interrupt
	URL   string
	Stage string // EscalationPaused or EscalationDeadlineNear
}

// RunLease is a process's hold on a run it executes: the epoch its writes
// carry, and whether a cancel of the run is pending.
type RunLease struct {
	Epoch           int64
	CancelRequested bool
}

// LeaseStore gives the process that executes a run ownership of it, so that
// several processes sharing one database never both write a run (fencing).
// Only a backend that processes share implements it (PostgreSQL); one with a
// single owner process (SQLite, which holds a file lock) has no use for it.
type LeaseStore interface {
	// TakeRun makes owner the run's owner until ttl from now and returns
	// its new epoch (every take bumps it, so the previous owner's writes are
	// refused from this moment on, with a *LeaseLostError); lost is called
	// once when a write of this process finds its epoch stale. A run that
	// is neither queued nor running has nothing to execute: nil, nil.
	TakeRun(ctx context.Context, runID, owner string, ttl time.Duration, lost func()) (*RunLease, error)
	// RenewRun extends the lease until ttl from now and reports whether a
	// cancel is pending; a stale epoch is a *LeaseLostError.
	RenewRun(ctx context.Context, runID string, epoch int64, ttl time.Duration) (cancelRequested bool, err error)
	// ReleaseRun gives the lease up once the run stopped executing here
	// (nothing when epoch is stale).
	ReleaseRun(ctx context.Context, runID string, epoch int64) error
}

// TriggerStore keeps a chain's triggers (schedules, hooks) and their
// firings. A firing that starts a run is recorded by CreateRun, with the
// run (Run.TriggerKind, TriggerID, TriggerTick).
type TriggerStore interface {
	// CreateSchedule stores s (ID set by the caller) for a live chain.
	CreateSchedule(ctx context.Context, s Schedule) (*Schedule, error)
	// UpdateSchedule replaces the schedule's fields (ID and ChainID pick
	// it); its firings stay.
	UpdateSchedule(ctx context.Context, s Schedule) (*Schedule, error)
	// DeleteSchedule deletes a chain's schedule and its firings.
	DeleteSchedule(ctx context.Context, chainID, id string) error
	// ListSchedules lists a chain's schedules by creation; chainID ""
	// lists the enabled schedules of every live chain (the scheduler's list).
	ListSchedules(ctx context.Context, chainID string) ([]Schedule, error)
	// TriggerBudget is the day budget of the schedule or hook id (zero
	// when it has none, or no longer exists).
	TriggerBudget(ctx context.Context, id string) (DayBudget, error)
	// CreateHook stores h (ID and Secret set by the caller) for a live chain.
	CreateHook(ctx context.Context, h Hook) (*Hook, error)
	// GetHook returns a hook of a live chain, with its secret.
	GetHook(ctx context.Context, id string) (*Hook, error)
	// ListHooks lists a chain's hooks by creation, without secrets.
	ListHooks(ctx context.Context, chainID string) ([]Hook, error)
	// DeleteHook deletes a chain's hook and its firings.
	DeleteHook(ctx context.Context, chainID, id string) error
	// RecordFiring records a firing that started no run (skipped, missed,
	// failed). A schedule tick already recorded is ErrAlreadyFired.
	RecordFiring(ctx context.Context, f Firing) error
	// ListFirings lists a trigger's firings newest first (limit <= 0: 20,
	// at most MaxFiringsKept).
	ListFirings(ctx context.Context, triggerID string, limit int) ([]Firing, error)
	// ChainBusy reports whether a run of the chain is queued or running.
	ChainBusy(ctx context.Context, chainID string) (bool, error)
	// UseHookSignature records that a call of hook hookID with a
	// signature of this SHA-256 digest was accepted, until expires (when
	// the signature's timestamp leaves the accepted window). A digest
	// recorded before and not expired at now is ErrSignatureUsed, and
	// nothing is written: of concurrent calls with one signature, in any
	// number of processes sharing the database, one is accepted.
	UseHookSignature(ctx context.Context, hookID string, digest []byte, now, expires time.Time) error
}

// Housekeeping is what the studio does to a store outside any request.
type Housekeeping interface {
	// RecoverInterrupted marks the runs a previous process left running as
	// failed (CodeInterruptedByRestart) so that they can be resumed; call it
	// at start-up. It returns how many it marked.
	RecoverInterrupted(ctx context.Context) (int, error)
	// PruneRuns deletes old runs with everything they stored, by ret; chains
	// are never touched. It returns how many runs it deleted.
	PruneRuns(ctx context.Context, ret Retention) (int, error)
	// Backup writes a consistent copy of the store to path, which must not
	// exist.
	Backup(ctx context.Context, path string) error
	// PruneHookSignatures deletes the webhook signature digests expired at
	// now (UseHookSignature) and returns how many.
	PruneHookSignatures(ctx context.Context, now time.Time) (int, error)
	// PruneConversations deletes the conversation turns kept before
	// before (agents' memory follows the runs' retention) and returns how
	// many.
	PruneConversations(ctx context.Context, before time.Time) (int, error)
}

// UserStore keeps the studio's named users. A user's token is
// never stored: only its SHA-256 (tokenHash, 32 bytes), which is how a
// request's token finds its user. Removed users leave every lookup and their
// name becomes free; their row stays, so that old audit records keep naming
// someone who existed.
type UserStore interface {
	// AddUser stores a new user; a name in use by a live user is
	// ErrNameTaken, a bad name or role ErrInvalid (store.CheckUser).
	AddUser(ctx context.Context, name, role string, tokenHash []byte) (*User, error)
	// UserByTokenHash returns the live user whose token has this SHA-256,
	// ErrNotFound when there is none.
	UserByTokenHash(ctx context.Context, tokenHash []byte) (*User, error)
	// GetUser returns the live user named name, ErrNotFound when none.
	GetUser(ctx context.Context, name string) (*User, error)
	// ListUsers lists the live users by name.
	ListUsers(ctx context.Context) ([]User, error)
	// SetUserRole changes a live user's role and returns the user.
	SetUserRole(ctx context.Context, name, role string) (*User, error)
	// RemoveUser removes a live user: its token stops working at once.
	RemoveUser(ctx context.Context, name string) error
}

// CredentialStore keeps credentials with their secret fields sealed; it
// never sees a value in clear (the vault seals and opens them).
type CredentialStore interface {
	// AddCredential stores a new credential; a name in use is ErrNameTaken.
	AddCredential(ctx context.Context, c *SealedCredential) error
	// UpdateCredential replaces the credential with c's id: its type,
	// fields, chains and who changed it when. ErrNotFound when none.
	UpdateCredential(ctx context.Context, c *SealedCredential) error
	// GetCredential returns the credential named name, ErrNotFound when none.
	GetCredential(ctx context.Context, name string) (*SealedCredential, error)
	// CredentialBudget is the day budget of the credential named name
	// (zero when it has none, or does not exist).
	CredentialBudget(ctx context.Context, name string) (DayBudget, error)
	// ListCredentials lists the credentials by name, without sealed values.
	ListCredentials(ctx context.Context) ([]Credential, error)
	// RemoveCredential deletes the credential named name.
	RemoveCredential(ctx context.Context, name string) error
	// TouchCredential records that a run used the credential with this id.
	TouchCredential(ctx context.Context, id string, at time.Time) error
	// CredentialKeyCheck returns the value sealed with the key in use when
	// the first credential was stored (nil before), so that a wrong key is
	// told at start-up rather than at a run.
	CredentialKeyCheck(ctx context.Context) ([]byte, error)
	// SetCredentialKeyCheck stores the key check once; a second one is
	// ErrConflict (only a rotation replaces it).
	SetCredentialKeyCheck(ctx context.Context, check []byte) error
	// ResealCredentials replaces every sealed value by reseal's answer and
	// the key check by check, in one transaction: all or nothing.
	ResealCredentials(ctx context.Context, reseal func(id, field string, sealed []byte) ([]byte, error), check []byte) error
}

// MCPServerStore keeps the MCP servers the studio connects to.
type MCPServerStore interface {
	// AddMCPServer stores a new server (CheckMCPServer first); a name in
	// use is ErrNameTaken.
	AddMCPServer(ctx context.Context, s *MCPServer) error
	// UpdateMCPServer replaces the server named s.Name, all but its
	// creation; ErrNotFound when none.
	UpdateMCPServer(ctx context.Context, s *MCPServer) error
	// GetMCPServer returns the server named name, ErrNotFound when none.
	GetMCPServer(ctx context.Context, name string) (*MCPServer, error)
	// ListMCPServers lists the servers by name.
	ListMCPServers(ctx context.Context) ([]MCPServer, error)
	// RemoveMCPServer deletes the server named name.
	RemoveMCPServer(ctx context.Context, name string) error
}

// AgentStore keeps the reusable agents, every version of each.
type AgentStore interface {
	// SaveAgent stores a.Source as a new version of the agent a.Name.
	// baseVersion 0 creates it (a name in use is ErrNameTaken); otherwise
	// it must be the agent's current version, else nothing is written and
	// the error is ErrVersionConflict. A source equal to the current
	// version's writes nothing. It returns the agent as stored.
	SaveAgent(ctx context.Context, a *Agent, baseVersion int) (*Agent, error)
	// GetAgent returns the agent's latest version, ErrNotFound when none.
	GetAgent(ctx context.Context, name string) (*Agent, error)
	// ListAgents lists every agent at its latest version, by name.
	ListAgents(ctx context.Context) ([]Agent, error)
	// AgentVersions lists an agent's versions, newest first.
	AgentVersions(ctx context.Context, name string) ([]Agent, error)
	// DeleteAgent deletes the agent and its versions.
	DeleteAgent(ctx context.Context, name string) error
}

// ConversationStore keeps agents' conversations (their memory): turns by
// scope and session, each append once per key, the oldest deleted past
// MaxConversationTurns.
type ConversationStore interface {
	// AppendTurns adds turns to a session in order, their text cut at
	// MaxConversationText. An append with a key the session has seen
	// writes nothing, so a node replayed after a crash adds its turns
	// once.
	AppendTurns(ctx context.Context, scope, session, key string, turns []ConversationTurn) error
	// LoadTurns returns a session's newest limit turns (at most
	// MaxConversationTurns), oldest first, and how many it keeps in all.
	LoadTurns(ctx context.Context, scope, session string, limit int) ([]ConversationTurn, int, error)
	// ListConversations lists sessions, the most recently added to first.
	ListConversations(ctx context.Context, f ConversationFilter) ([]ConversationSession, error)
	// ClearConversation deletes a session's turns and returns how many;
	// ErrNotFound when it keeps none.
	ClearConversation(ctx context.Context, scope, session string) (int, error)
}

// Backend is a whole storage backend: what cmd/studio opens and hands to the
// server and the run service.
type Backend interface {
	ChainStore
	RunStore
	EventStore
	CheckpointStore
	InterruptStore
	TriggerStore
	Housekeeping
	UserStore
	UsageStore
	CredentialStore
	MCPServerStore
	AgentStore
	ConversationStore
	// Ping makes one round trip to the database (the readiness probe asks
	// it with a short deadline): nil when it answers.
	Ping(ctx context.Context) error
	// Close closes the store. Close every EventWriter on it first.
	Close() error
}
