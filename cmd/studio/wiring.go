package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/internal/mcphost"
	"github.com/chainstudio/studio/internal/telemetry"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/runs/riverqueue"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/vault"
	"github.com/chainstudio/studio/web/ops"
)

// Main is what the processes that execute runs (serve and worker) share:
// the flags both take, defined once by newMain, and what Open opens from
// them (tracing and the log, the store, the credentials vault, the code
// sandbox, the tools with the MCP servers', the agents), which Close
// closes in reverse. serve puts the scheduler, the sweeper and HTTP on top
// of its run service; worker executes runs from the queue and serves
// nothing.
type Main struct {
	// The shared flags.
	dsn, keyFile      *string // --db and --credentials-key-file, worded by each command (mainFlags)
	workspace         *string
	allowProc         listFlag
	allowProcEnv      envNameFlag
	httpAllowPrivate  *bool
	mcp               mcpFlags
	modelAllowPrivate *bool
	agentsDir         *string
	budgets           budgetFlags
	code              *codeFlags
	gov               governorFlags
	lease             leaseFlags

	// Level is the log's level (serve's -v: debug).
	Level slog.Level

	// ExprBudget and templateBudget are the budgets check read from the
	// flags.
	ExprBudget     expr.Budget
	templateBudget builtin.TemplateBudget

	// What Open opens.
	Log       *slog.Logger
	Tracer    *telemetry.Tracer // nil: no OTEL_* variables
	DB        *backend
	Vault     *vault.Vault // the credentials chains use by name
	Registry  *engine.Registry
	MCP       *mcphost.Host // the registered MCP servers' connections
	Agents    *agent.Set
	ModelHTTP *http.Client // agents' model calls, behind the address guard unless --model-allow-private

	closers []func() error // what Open opened, in order
}

// mainFlags are the words of the two shared flags whose default and help
// differ between the commands.
type mainFlags struct {
	db, dbUsage string // --db's default and help
	keyUsage    string // --credentials-key-file's help
}

// newMain defines the shared flags on fs.
func newMain(fs *flag.FlagSet, words mainFlags) *Main {
	m := &Main{
		dsn:       fs.String("db", words.db, words.dbUsage),
		keyFile:   fs.String("credentials-key-file", os.Getenv("STUDIO_CREDENTIALS_KEY_FILE"), words.keyUsage),
		workspace: fs.String("workspace", "", "let read_file/write_file use the folder `DIR` (default: file access disabled)"),
	}
	fs.Var(&m.allowProc, "allow-proc", "let proc nodes run the executable `NAME` (repeatable; default: none)")
	fs.Var(&m.allowProcEnv, "allow-proc-env", "let proc nodes set the environment variable `NAME` (repeatable; default: none; LD_* and other loader variables never)")
	m.httpAllowPrivate = fs.Bool("http-allow-private", false, "let the http tool reach loopback and private addresses")
	m.mcp.register(fs)
	m.modelAllowPrivate = fs.Bool("model-allow-private", false, "let agents' model calls reach loopback and private addresses (a local Ollama, vLLM or LM Studio); the http tool stays guarded")
	m.agentsDir = fs.String("agents", envOr("STUDIO_AGENTS", "./agents"), "the folder `DIR` of *.agent.yaml agent definitions (env STUDIO_AGENTS); a missing folder means no agents")
	m.budgets = registerBudgets(fs)
	m.code = registerCode(fs)
	m.gov = registerGovernor(fs)
	m.lease = registerLease(fs)
	return m
}

// check refuses the shared flags' values that are out of range, before
// anything opens, and keeps the budgets they give.
func (m *Main) check() error {
	var err error
	if m.ExprBudget, m.templateBudget, err = m.budgets.values(); err != nil {
		return err
	}
	if err := m.code.check(); err != nil {
		return err
	}
	if err := m.gov.check(); err != nil {
		return err
	}
	return m.lease.check()
}

// Open opens all of it: openLog, openStore, then openTools. On an error,
// what opened stays for Close. A usageError is what the environment or the
// stored MCP servers ask for that cannot be.
func (m *Main) Open(ctx context.Context, stderr io.Writer) error {
	if err := m.openLog(ctx, stderr); err != nil {
		return err
	}
	if err := m.openStore(ctx); err != nil {
		return err
	}
	return m.openTools(ctx)
}

// openLog starts tracing (when OTEL_* variables ask for it) and the log on
// stderr, which carries the spans' ids when tracing.
func (m *Main) openLog(ctx context.Context, stderr io.Writer) error {
	tracer, err := telemetry.FromEnv(ctx, os.Getenv)
	if err != nil {
		return usageError{fmt.Errorf("tracing: %w", err)}
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: m.Level})
	if tracer != nil {
		m.Tracer = tracer
		handler = telemetry.LogHandler(handler)
		m.onClose(func() error { shutdownTracer(tracer, stderr); return nil })
	}
	m.Log = slog.New(handler)
	if tracer != nil {
		m.Log.Info("exporting traces over OTLP", "endpoint", otlpEndpoint())
	}
	return nil
}

// openStore opens the store and the credentials vault over it. A SQLite
// store's runs that the last stop interrupted are failed first; on
// PostgreSQL other processes' runs are live, and nothing is failed (a
// process that died leaves its runs running; docs/deploy.md).
func (m *Main) openStore(ctx context.Context) error {
	var err error
	if m.DB, err = openBackend(ctx, *m.dsn, m.Log); err != nil {
		return err
	}
	m.onClose(m.DB.Close)
	if m.DB.pg == nil {
		n, err := m.DB.RecoverInterrupted(ctx)
		if err != nil {
			return fmt.Errorf("recover runs: %w", err)
		}
		if n > 0 {
			m.Log.Info("marked runs interrupted by the last stop as failed (interrupted_by_restart: resume them; interrupted_before_start: start them again)", "runs", n)
		}
	}
	m.Vault, err = openVault(ctx, m.DB, m.keySource(), m.Log)
	return err
}

// openTools starts the code sandbox, builds the tool registry with the MCP
// servers' tools, and loads the agents over it.
func (m *Main) openTools(ctx context.Context) error {
	codeRunner, closeCode, err := m.code.runner(true)
	if err != nil {
		return err
	}
	m.onClose(func() error { closeCode(); return nil })
	m.Registry = builtinRegistry(builtin.Options{Workspace: *m.workspace, ProcAllow: m.allowProc, ProcAllowEnv: m.allowProcEnv,
		HTTPAllowPrivate: *m.httpAllowPrivate, TemplateBudget: m.templateBudget, Code: codeRunner})
	if m.MCP, err = startMCP(ctx, m.DB, m.Vault, m.Registry, m.mcp, m.Log); err != nil {
		return usageError{err}
	}
	m.onClose(func() error { m.MCP.Close(); return nil })
	var urlRefused func(string) string
	if !*m.modelAllowPrivate {
		urlRefused = builtin.ModelURLRefused
	}
	if m.Agents, err = agent.LoadDir(*m.agentsDir, agent.LoadOptions{Tools: agentToolKnown(m.Registry), Providers: modelProviders, URLRefused: urlRefused}); err != nil {
		return err
	}
	if err := ops.LoadStoredAgents(ctx, m.DB, m.Agents); err != nil {
		return fmt.Errorf("stored agents: %w", err)
	}
	pollCtx, stopPoll := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() { defer close(polled); pollStoredAgents(pollCtx, m.DB, m.Agents, storedAgentsPollPeriod, m.Log) }()
	m.onClose(func() error { stopPoll(); <-polled; return nil })
	m.ModelHTTP = builtin.ModelHTTPClient(*m.modelAllowPrivate)
	return nil
}

// storedAgentsPollPeriod is how soon a process runs an agent another
// process (or `studio agents`) stored; a change through this process's
// API applies at once.
const storedAgentsPollPeriod = 10 * time.Second

// pollStoredAgents reloads the stored agents every period until ctx ends.
func pollStoredAgents(ctx context.Context, db store.AgentStore, set *agent.Set, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := ops.LoadStoredAgents(ctx, db, set); err != nil && ctx.Err() == nil {
			log.Warn("stored agents: reload", "err", err)
		}
	}
}

// keySource is where the credentials key is (credentialKeySource).
func (m *Main) keySource() keySource { return credentialKeySource(*m.dsn, *m.keyFile) }

func (m *Main) onClose(f func() error) { m.closers = append(m.closers, f) }

// Close closes what Open opened, the last first: the MCP connections, the
// code sandbox, the store (and its lock), then the spans still buffered.
func (m *Main) Close() error {
	var errs []error
	for i := len(m.closers) - 1; i >= 0; i-- {
		errs = append(errs, m.closers[i]())
	}
	m.closers = nil
	return errors.Join(errs...)
}

// runOptions are the run service's options over what Open opened.
func (m *Main) runOptions() runs.Options {
	opts := runs.Options{Store: m.DB, Registry: m.Registry, Agents: m.Agents, Logger: m.Log,
		Limits: m.budgets.limits, ExprBudget: m.ExprBudget, ModelHTTP: m.ModelHTTP, Conversations: m.DB}
	if m.Vault != nil {
		opts.Credentials = m.Vault
	}
	if m.Tracer != nil {
		opts.Tracer = m.Tracer
	}
	m.gov.applyTo(&opts)
	return opts
}

// queue makes opts' executor the distributed one over the PostgreSQL
// store's River queue, executing at most workers runs here at once (0: it
// only inserts jobs), with this process's lease timings; watchers in other
// processes hear of the events stored here at once, and with hints this
// process hears of theirs.
func (m *Main) queue(ctx context.Context, opts *runs.Options, workers int, hints bool) (*riverqueue.Queue, *runs.Distributed, error) {
	q, err := riverqueue.New(m.DB.pg, riverqueue.Options{Workers: workers, Logger: m.Log, LeaseTTL: *m.lease.ttl, ReapEvery: *m.lease.reap})
	if err != nil {
		return nil, nil, err
	}
	dopts := runs.DistributedOptions{Dispatcher: q, Store: m.DB.pg}
	m.lease.applyTo(&dopts)
	// Watchers elsewhere hear of this process's events at once.
	m.DB.pg.NotifyEvents(true)
	if hints { // this process serves watchers: it hears of the others' events
		dopts.EventHints = m.DB.pg.ListenEvents(ctx)
	}
	dist := runs.NewDistributed(dopts)
	opts.Executor = dist
	return q, dist, nil
}

// usageError is a start-up failure of what the flags or the environment
// ask for: exit status 2 (any other failure is 1).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// fail writes err as a command's last words and returns its exit status.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "studio: %v\n", err)
	if errors.As(err, new(usageError)) {
		return exitUsage
	}
	return exitFailed
}
