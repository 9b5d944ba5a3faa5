package store

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
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
	Doc         *chain.Chain
	// Published is the version triggers, webhooks, API runs that name no
	// version, skill calls and MCP tools run; Version (the newest) is the
	// draft the designer edits. They differ while there are unpublished
	// changes.
	Published Publication
	// MCPExposed: the studio's MCP server offers the chain as a tool. A
	// setting of the record that only an admin changes (SetChainMCP), not
	// part of the document, so an edit or an import never exposes a chain.
	MCPExposed bool
}

// Publication says which version of a chain is published, when, by whom
// and why. Version 0: nothing is published (the chain cannot be run by a
// trigger or by name).
type Publication struct {
	Version int
	At      time.Time
	By      string
	Message string
}

// Unpublished reports whether the chain has versions newer than the one
// published.
func (c *Chain) Unpublished() bool { return c.Version != c.Published.Version }

// ChainSummary is one row of ListChains.
type ChainSummary struct {
	ID            string
	Name          string
	Description   string
	Version       int
	NodeCount     int
	Published     int // the published version (0: none)
	Created       time.Time
	Updated       time.Time
	LastRunStatus chain.RunStatus
	LastRunAt     time.Time
}

// ChainFilter selects chains for ListChains.
type ChainFilter struct {
	Query  string // name substring, case-insensitive
	Name   string // the exact name (a skill node's lookup); "" matches any
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
	Doc       *chain.Chain
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
	KindRun    = "run"
	KindResume = "resume"
	KindRerun  = "rerun"
	KindNode   = "node" // one node run alone, its upstream data pinned
	// KindPinned: a designer's run of a version with pinned outputs that
	// uses them (runs.Service.StartWithPins). Its row does not say all it
	// runs, so a restart never requeues it (store/sqlstore, Recovery).
	KindPinned   = "pinned"
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
	Status       chain.RunStatus
	Error        *engine.RunError
	Outcome      string // engine.OutcomeRejected when a person's "no" decided how it ended
	FinalOutput  any
	Outputs      map[string]any
	NodesRun     int
	Started      time.Time
	Ended        time.Time
	DurationMS   int64
	Nodes        []engine.NodeResult
	// TriggerKind and TriggerID say which trigger started the run
	// (TriggerSchedule, TriggerWebhook, TriggerA2ESession); "" when a
	// person or program did
	// (Kind says how). TriggerTick is a schedule's tick: CreateRun records
	// the firing (TriggerID, TriggerTick) with the run in one transaction,
	// and refuses a tick already recorded (ErrAlreadyFired).
	TriggerKind string
	TriggerID   string
	TriggerTick time.Time
}

// RunFilter selects runs for ListRuns.
type RunFilter struct {
	ChainID string          // "" = runs of every chain
	Status  chain.RunStatus // "" = any status
	// NodeID keeps the runs that reached this node: their checkpoint log
	// has an entry of it (it finished, failed or paused there; a skip does
	// not count). Answered from the checkpoints' node column, run by run.
	NodeID string
	Limit  int    // default 50, at most 1000
	Before string // cursor from a previous page; "" = newest
	After  string // cursor of a page's first run: the page of runs just newer than it
	// Brief leaves the runs' final outputs out (nil): a caller that shows
	// none reads none, which matters when outputs are megabytes.
	Brief bool
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

// CodeInterruptedBeforeStart is the error code of runs that were waiting in
// the queue when the studio stopped and cannot be queued again (a re-run, a
// node run, an ad-hoc run: what they run was not stored): they never
// started, so they are started again, not resumed.
const CodeInterruptedBeforeStart = "interrupted_before_start"

// CodeStorageUnavailable is the error code of runs that stopped because the
// store refused their writes (a full disk): their end, or some of their
// events, could not be stored.
const CodeStorageUnavailable = "storage_unavailable"

// Retention says which runs PruneRuns deletes: runs that started more than
// OlderThan ago (0: any age) and are not among the KeepPerChain newest runs of
// their chain (0: keep none by count). At least one must be set. Running and
// paused runs are never pruned; ad-hoc runs (no chain) count as one chain.
type Retention struct {
	OlderThan    time.Duration
	KeepPerChain int
}

// Roles a user can have. They form a ladder: each role may do
// what the roles before it may (docs/design.md, "People and roles").
const (
	RoleViewer = "viewer" // reads chains, runs and pages
	RoleEditor = "editor" // edits and runs chains
	// RolePublisher edits and runs chains, and publishes the ones an
	// editor may not (exposed, triggered or using a chain-limited
	// credential), and runs their drafts.
	RolePublisher = "publisher"
	RoleApprover  = "approver" // answers paused runs, besides what an editor does
	RoleAdmin     = "admin"    // manages users, besides everything else
)

// Roles lists the roles from the least to the most allowed.
var Roles = []string{RoleViewer, RoleEditor, RolePublisher, RoleApprover, RoleAdmin}

// MaxUserName bounds a user's name (bytes).
const MaxUserName = 64

// User is a named identity that signs in with its own token. The store
// keeps only the SHA-256 of the token, never the token.
type User struct {
	Name    string
	Role    string
	Created time.Time
}

// CheckUser reports what is wrong with a user's name and role: a name of 1
// to MaxUserName letters, digits and . _ - @ (it appears in logs, audit
// records and the page header), not "token" or "local" (the identities
// that are not users), and one of Roles. The error is ErrInvalid.
func CheckUser(name, role string) error {
	if name == "" || len(name) > MaxUserName {
		return Errorf(EINVALID, "user name %q: want 1 to %d characters", name, MaxUserName)
	}
	if name == "token" || name == "local" {
		return Errorf(EINVALID, "user name %q is reserved: the studio calls the --token %q and the open local studio's user %q", name, "token", "local")
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == '@'
		if !ok {
			return Errorf(EINVALID, "user name %q: use letters, digits and . _ - @ only", name)
		}
	}
	return CheckRole(role)
}

// CheckRole reports an unknown role (ErrInvalid), naming the known ones.
func CheckRole(role string) error {
	for _, r := range Roles {
		if r == role {
			return nil
		}
	}
	return Errorf(EINVALID, "role %q: want one of viewer, editor, approver, admin", role)
}

// Trigger kinds: what started a run other than a person or a program
// calling the API (Run.TriggerKind). An A2E session's runs name the
// session (TriggerID, the session id); sessions have no firings.
const (
	TriggerSchedule   = "schedule"
	TriggerWebhook    = "webhook"
	TriggerA2ESession = "a2e_session"
	// TriggerMCP: a tool call on the studio's MCP server; TriggerID is the
	// caller's name (a user, "token" or "local").
	TriggerMCP = "mcp"
)

// Overlap policies: what a schedule does at a tick while a run of its chain
// is still going (queued or running).
const (
	OverlapSkip  = "skip"  // the tick is recorded as skipped; nothing starts
	OverlapQueue = "queue" // the tick waits (one at most) until no run of the chain is going
	OverlapAllow = "allow" // the run starts anyway
)

// Catch-up policies: what a schedule does with the ticks it missed while
// the studio was down.
const (
	CatchUpSkip = "skip" // missed ticks are recorded as missed; nothing starts
	CatchUpOnce = "once" // one run stands for all of them (the latest)
)

// Firing outcomes.
const (
	FiringStarted = "started" // a run started (RunID)
	FiringSkipped = "skipped" // overlap policy skip: a run of the chain was going
	FiringMissed  = "missed"  // the studio was down at the tick (catch-up skip, or older than the one caught up)
	FiringFailed  = "failed"  // the run could not start (Message says why)
)

// Schedule fires runs of a chain at the ticks of a cron expression in a time
// zone. Schedules are records of their own, not part of the chain document
// (docs/design.md, "Triggers").
type Schedule struct {
	ID       string
	ChainID  string
	Cron     string // five fields or a descriptor (@hourly …); runs.ParseCron checks it
	TimeZone string // IANA name; "" is UTC
	Input    map[string]any
	Overlap  string // Overlap*
	CatchUp  string // CatchUp*
	Enabled  bool
	// Budget holds the model calls of the runs it starts, per day.
	Budget  DayBudget
	Created time.Time
	Updated time.Time
	// LastTick is the newest tick recorded for the schedule (fired,
	// skipped or missed); zero when none. Filled by the reads.
	LastTick time.Time
}

// Hook starts a run of a chain when a signed POST reaches
// /v1/hooks/{id}. Secret is the HMAC key: returned by CreateHook and GetHook
// (the server verifies with it), never by ListHooks.
type Hook struct {
	ID      string
	ChainID string
	Secret  string
	// Sync makes the hook answer with the run's final output when it ends
	// within SyncTimeout (else 202 with the run id).
	Sync        bool
	SyncTimeout time.Duration
	// Budget holds the model calls of the runs it starts, per day.
	Budget  DayBudget
	Created time.Time
	// LastFired is the newest firing's time; zero when none. Filled by the
	// reads.
	LastFired time.Time
}

// DayBudget is a model spending limit per day (UTC): tokens, input and
// output, and cost in the price table's currency; zero is no limit.
type DayBudget struct {
	Tokens int64   `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
}

// IsZero reports whether the budget limits nothing.
func (b DayBudget) IsZero() bool { return b.Tokens <= 0 && b.Cost <= 0 }

// Firing is one tick of a schedule or one call of a hook, and what came of
// it. A schedule's ticks are unique: a second firing of the same (trigger,
// tick) is refused with ErrAlreadyFired, which is what makes a tick fire
// once across processes sharing a database.
type Firing struct {
	TriggerID string
	Tick      time.Time // schedules: the cron tick; zero for hooks
	RunID     string    // the run it started, if any
	Outcome   string    // Firing*
	Message   string
	Created   time.Time
}

// MaxFiringsKept bounds the firings kept per trigger: older ones are deleted
// as new ones are recorded (the newest tick is always kept).
const MaxFiringsKept = 100

// MaxCredentialName bounds a credential's name (bytes).
const MaxCredentialName = 64

// Credential is a stored credential as it may be shown: its name, type,
// the values of the fields that are not secret, which secret fields hold a
// value, and who may use it. A secret value is never part of it.
type Credential struct {
	ID     string
	Name   string
	Type   string
	Public map[string]string // the non-secret fields (an API key's header name, a username, a base URL)
	Set    []string          // the secret fields that hold a value, by name
	// Chains lists the ids of the chains that may use it; empty: every chain.
	Chains []string
	// Hosts lists where it may be sent (credential.CleanHosts entries);
	// empty: its type's default hosts (a provider's API), none for the
	// HTTP types.
	Hosts []string
	// Budget holds the model calls that use it, per day: plain metadata,
	// never sealed.
	Budget    DayBudget
	CreatedBy string
	Created   time.Time
	UpdatedBy string
	Updated   time.Time
	LastUsed  time.Time // zero until a run first uses it
	// Unreadable says why a listed record cannot be read (its stored
	// fields do not decode); "" for a sound one. Only a list sets it: a
	// get of such a record is an error.
	Unreadable string
}

// SealedCredential is a credential with its secret fields sealed (field
// name → sealed bytes); only the credential vault opens them.
type SealedCredential struct {
	Credential
	Sealed map[string][]byte
}

// CheckCredentialName reports what is wrong with a credential's name: 1 to
// MaxCredentialName letters, digits and . _ - (chains name it in their
// documents). The error is ErrInvalid.
func CheckCredentialName(name string) error {
	if name == "" || len(name) > MaxCredentialName {
		return Errorf(EINVALID, "credential name %q: want 1 to %d characters", name, MaxCredentialName)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return Errorf(EINVALID, "credential name %q: use letters, digits and . _ - only", name)
		}
	}
	return nil
}

// MCP server transports (as engine/mcp names them).
const (
	MCPTransportHTTP  = "http"
	MCPTransportSSE   = "sse"
	MCPTransportStdio = "stdio"
)

// MCPServer is a registered MCP server whose tools chains call as
// mcp:<Name>/<tool>. Nothing in it is secret: an http or sse server's
// authentication comes from the studio credential named Credential,
// resolved when the studio connects, and Headers hold only values that are
// not secret (see CheckMCPServer).
type MCPServer struct {
	Name      string
	Transport string // MCPTransportHTTP, MCPTransportSSE or MCPTransportStdio
	// URL, Headers and Credential are for http and sse.
	URL        string
	Headers    map[string]string
	Credential string
	// Command, Args and Env are for stdio.
	Command   string
	Args      []string
	Env       map[string]string
	Enabled   bool
	CreatedBy string
	Created   time.Time
	UpdatedBy string
	Updated   time.Time
}

// Bounds of an MCP server's record.
const (
	MaxMCPServerName = 64
	MaxMCPURL        = 2048
	MaxMCPHeaders    = 32
	MaxMCPArgs       = 64
	MaxMCPEnv        = 64
	MaxMCPValue      = 4096 // a header's, an argument's or a variable's value, and the command
)

// secretHeaders are headers that carry authentication: their values belong
// in a credential, never in a server's record.
var secretHeaders = map[string]bool{"authorization": true, "proxy-authorization": true, "cookie": true}

// secretWords mark a header or variable name whose value is a secret.
var secretWords = []string{"key", "token", "secret", "password", "passwd", "auth", "session", "cookie"}

// LooksSecret reports whether a header or environment variable named name
// would carry a secret (Authorization, X-API-Key, GITHUB_TOKEN, …).
func LooksSecret(name string) bool {
	n := strings.ToLower(name)
	if secretHeaders[n] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// CheckMCPServer reports the first thing wrong with s's record (ErrInvalid,
// naming the server and the field). It checks the record's shape; the rules
// that depend on the host (the command allow-list, the address guard) are
// checked when the studio connects.
func CheckMCPServer(s *MCPServer) error {
	bad := func(field, format string, a ...any) error {
		return Errorf(EINVALID, "mcp server %q: %s: %s", s.Name, field, fmt.Sprintf(format, a...))
	}
	if s.Name == "" || len(s.Name) > MaxMCPServerName {
		return bad("name", "want 1 to %d characters", MaxMCPServerName)
	}
	for _, r := range s.Name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return bad("name", "%q is not allowed; use letters, digits, '-' and '_'", r)
		}
	}
	value := func(field, v string) error {
		if len(v) > MaxMCPValue {
			return bad(field, "longer than %d bytes", MaxMCPValue)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return bad(field, "has a line break or NUL byte")
		}
		return nil
	}
	switch s.Transport {
	case MCPTransportHTTP, MCPTransportSSE:
		if s.URL == "" {
			return bad("url", "the %s transport needs a URL", s.Transport)
		}
		if len(s.URL) > MaxMCPURL {
			return bad("url", "longer than %d bytes", MaxMCPURL)
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url", "%q is not an http or https URL", s.URL)
		}
		if u.User != nil {
			return bad("url", "must not carry a user or password; name a credential instead")
		}
		if len(s.Headers) > MaxMCPHeaders {
			return bad("headers", "at most %d", MaxMCPHeaders)
		}
		for k, v := range s.Headers {
			if k == "" || strings.ContainsAny(k, " :\r\n\x00") {
				return bad("headers", "%q is not a header name", k)
			}
			if LooksSecret(k) {
				return bad("headers."+k, "looks like a secret; put it in a credential (Settings → Credentials) and name that credential")
			}
			if err := value("headers."+k, v); err != nil {
				return err
			}
		}
		if s.Credential != "" {
			if err := CheckCredentialName(s.Credential); err != nil {
				return bad("credential", "%v", err)
			}
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			return bad("command", "command, args and env are for the stdio transport, not %s", s.Transport)
		}
	case MCPTransportStdio:
		if s.URL != "" || len(s.Headers) > 0 || s.Credential != "" {
			return bad("url", "url, headers and credential are for the http and sse transports, not stdio")
		}
		if s.Command == "" {
			return bad("command", "the stdio transport needs a command")
		}
		if err := value("command", s.Command); err != nil {
			return err
		}
		if len(s.Args) > MaxMCPArgs {
			return bad("args", "at most %d", MaxMCPArgs)
		}
		for i, a := range s.Args {
			if err := value(fmt.Sprintf("args[%d]", i), a); err != nil {
				return err
			}
		}
		if len(s.Env) > MaxMCPEnv {
			return bad("env", "at most %d", MaxMCPEnv)
		}
		for k, v := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return bad("env", "%q is not a variable name", k)
			}
			if LooksSecret(k) {
				return bad("env."+k, "looks like a secret, and a server's record is not encrypted; give the program a file it reads instead")
			}
			if err := value("env."+k, v); err != nil {
				return err
			}
		}
	default:
		return bad("transport", "%q is not one of http, sse, stdio", s.Transport)
	}
	return nil
}

// Agent is a reusable agent kept in the store: the source of its
// definition (YAML or JSON, as an agent file holds it) at a version. Every
// version is kept; chains name the agent and run its latest.
type Agent struct {
	Name        string
	Version     int
	Source      string
	Description string
	Message     string // why this version was made
	CreatedBy   string
	Created     time.Time // of version 1
	UpdatedBy   string
	Updated     time.Time // of this version
}

// Bounds of an agent's record.
const (
	MaxAgentName    = 64
	MaxAgentSource  = 1 << 20 // an agent file's limit
	MaxAgentMessage = 500
	MaxAgentsStored = 1000
)

// CheckAgent checks a record's shape (the definition is the agent
// package's to check), naming the field.
func CheckAgent(a *Agent) error {
	switch {
	case a.Name == "" || len(a.Name) > MaxAgentName:
		return fmt.Errorf("%w: agent name: 1 to %d bytes", ErrInvalid, MaxAgentName)
	case a.Source == "":
		return fmt.Errorf("%w: agent %q: the definition is empty", ErrInvalid, a.Name)
	case len(a.Source) > MaxAgentSource:
		return fmt.Errorf("%w: agent %q: the definition is %d bytes, over the limit of %d (1 MiB)", ErrInvalid, a.Name, len(a.Source), MaxAgentSource)
	case len(a.Message) > MaxAgentMessage:
		return fmt.Errorf("%w: agent %q: message: over %d bytes", ErrInvalid, a.Name, MaxAgentMessage)
	}
	return nil
}

// Bounds of kept conversations (agents' memory).
const (
	// MaxConversationText is the most text a turn keeps; a longer one is
	// cut and says so.
	MaxConversationText = 32 << 10
	// MaxConversationTurns is the most turns a session keeps: an append
	// past it deletes the oldest.
	MaxConversationTurns = 1000
	// MaxConversationScope bounds a scope (a chain's name and a node's id
	// together), MaxConversationName a session and an append key.
	MaxConversationScope = 600
	MaxConversationName  = 200
	// DefaultConversationList and MaxConversationList bound a list of
	// sessions.
	DefaultConversationList = 100
	MaxConversationList     = 1000
)

// ConversationTurn is one kept message of an agent's conversation: the
// user's message or the agent's final answer.
type ConversationTurn struct {
	ID   int64
	Role string // user or assistant
	Text string
	At   time.Time
}

// ConversationSession is one kept conversation: its scope (the agent, or
// the chain and node of an agent defined there), its session key, how
// many turns it keeps and when the last was added.
type ConversationSession struct {
	Scope   string
	Session string
	Turns   int
	LastAt  time.Time
}

// ConversationFilter picks the sessions ListConversations returns.
type ConversationFilter struct {
	Scope string // "": every scope
	Limit int    // <= 0: DefaultConversationList; at most MaxConversationList
}

// ClipConversationText cuts a turn's text at MaxConversationText (on a
// rune boundary) with a note saying how long it was.
func ClipConversationText(s string) string {
	if len(s) <= MaxConversationText {
		return s
	}
	cut := s[:MaxConversationText]
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + fmt.Sprintf("\n[the turn was %d bytes; it was cut at %d]", len(s), MaxConversationText)
}

// CheckConversation refuses an empty or oversized scope or session
// (ErrInvalid naming which).
func CheckConversation(scope, session string) error {
	for _, f := range []struct {
		name, v string
		most    int
	}{{"scope", scope, MaxConversationScope}, {"session", session, MaxConversationName}} {
		if f.v == "" || len(f.v) > f.most {
			return fmt.Errorf("%w: conversation %s: want 1 to %d bytes, got %d", ErrInvalid, f.name, f.most, len(f.v))
		}
	}
	return nil
}
