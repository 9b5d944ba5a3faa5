package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/examples"
	"github.com/chainstudio/studio/internal/mcphost"
	"github.com/chainstudio/studio/internal/telemetry"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/runs/riverqueue"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres"
	"github.com/chainstudio/studio/store/vault"
	"github.com/chainstudio/studio/web"
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", envOr("STUDIO_ADDR", "127.0.0.1:8080"), "listen on `ADDR`, HOST:PORT (env STUDIO_ADDR); anything but loopback needs --token or --insecure")
	dbPath := fs.String("db", envOr("STUDIO_DB", "studio.db"), "the database: a SQLite `FILE`, or a postgres:// URL (env STUDIO_DB)")
	token := fs.String("token", os.Getenv("STUDIO_TOKEN"), "bearer `TOKEN` required by the API and pages (env STUDIO_TOKEN)")
	insecure := fs.Bool("insecure", false, "allow listening off loopback without a token")
	publicURL := fs.String("public-url", os.Getenv("STUDIO_PUBLIC_URL"), "the `URL` people reach the studio at, behind a proxy (env STUDIO_PUBLIC_URL): its host is accepted besides the listen address and loopback names, and https makes the sign-in cookie Secure")
	var trustedProxies prefixListFlag
	fs.Var(&trustedProxies, "trusted-proxy", "take the client's address from X-Forwarded-For (its rightmost hop outside these ranges) when the peer is in the `CIDR` (repeatable; default: none, the header is ignored)")
	workspace := fs.String("workspace", "", "let read_file/write_file use the folder `DIR` (default: file access disabled)")
	var allowProc listFlag
	fs.Var(&allowProc, "allow-proc", "let proc nodes run the executable `NAME` (repeatable; default: none)")
	var allowProcEnv envNameFlag
	fs.Var(&allowProcEnv, "allow-proc-env", "let proc nodes set the environment variable `NAME` (repeatable; default: none; LD_* and other loader variables never)")
	allowPrivate := fs.Bool("http-allow-private", false, "let the http tool reach loopback and private addresses")
	var mcpf mcpFlags
	mcpf.register(fs)
	modelAllowPrivate := fs.Bool("model-allow-private", false, "let agents' model calls reach loopback and private addresses (a local Ollama, vLLM or LM Studio); the http tool stays guarded")
	noExamples := fs.Bool("no-examples", false, "do not load the example chains into an empty database")
	agentsDir := fs.String("agents", envOr("STUDIO_AGENTS", "./agents"), "the folder `DIR` of *.agent.yaml agent definitions (env STUDIO_AGENTS); a missing folder means no agents")
	verbose := fs.Bool("v", false, "log every request")
	pricesFile := fs.String("prices", os.Getenv("STUDIO_PRICES"), "a YAML price table `FILE`: model name → {input, output}, the prices of a million tokens (env STUDIO_PRICES); without it, tokens are shown without cost")
	keyFile := fs.String("credentials-key-file", os.Getenv("STUDIO_CREDENTIALS_KEY_FILE"), "the credentials key `FILE`, 64 hex digits, mode 0600 (env STUDIO_CREDENTIALS_KEY_FILE, or the key itself in STUDIO_CREDENTIALS_KEY); default on SQLite: the database's path + .key, created on first start; on PostgreSQL every process needs the same key, and without one credentials are off")
	worker := fs.Bool("worker", true, "on PostgreSQL, also execute runs in this process (--worker=false: API and pages only, runs go to studio worker processes)")
	budgets := registerBudgets(fs)
	codeOpts := registerCode(fs)
	gov := registerGovernor(fs)
	a2eSess := registerA2ESessions(fs)
	streams := registerStreams(fs)
	lease := registerLease(fs)
	var keep retention
	keep.register(fs)
	fs.Usage = func() {
		printUsage(fs, "studio [serve] [flags]",
			"Starts the studio: the designer in the browser, the JSON API and the A2E host.\n"+
				"It logs url=http://HOST:PORT once it listens; SIGINT or SIGTERM stops it cleanly.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, args) {
		return exitUsage
	}
	if err := checkServeSecurity(*token, *publicURL); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	exprBudget, tplBudget, err := budgets.values()
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	if err := codeOpts.check(); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	if err := gov.check(); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	if err := a2eSess.check(); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	if err := streams.check(); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	if err := lease.check(); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	var prices *pricing.Prices
	if *pricesFile != "" {
		if prices, err = web.LoadPrices(*pricesFile); err != nil {
			fmt.Fprintf(stderr, "studio: --prices: %v\n", err)
			return exitUsage
		}
	}
	tracer, err := telemetry.FromEnv(ctx, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "studio: tracing: %v\n", err)
		return exitUsage
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if tracer != nil {
		handler = telemetry.LogHandler(handler)
		defer shutdownTracer(tracer, stderr)
	}
	log := slog.New(handler)
	if tracer != nil {
		log.Info("exporting traces over OTLP", "endpoint", otlpEndpoint())
	}
	if prices != nil {
		log.Info("loaded model prices", "models", prices.Len(), "file", *pricesFile)
	}

	db, err := openBackend(ctx, *dbPath, log)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer db.Close()
	if db.pg != nil {
		// Other processes' runs are live: nothing is failed at start-up
		// (a process that died leaves its runs running; docs/deploy.md).
	} else if n, err := db.RecoverInterrupted(ctx); err != nil {
		fmt.Fprintf(stderr, "studio: recover runs: %v\n", err)
		return exitFailed
	} else if n > 0 {
		log.Info("marked runs interrupted by the last stop as failed (interrupted_by_restart: resume them; interrupted_before_start: start them again)", "runs", n)
	}
	src := credentialKeySource(*dbPath, *keyFile)
	vlt, err := openVault(ctx, db, src, log)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	if vlt.Enabled() {
		log.Info("credentials are sealed with the key in "+src.describe()+"; back it up with the database", "key", src.describe())
	} else {
		log.Info("credentials are off: no credentials key (--credentials-key-file or " + keyEnv + ")")
	}
	if pol, ok := keep.policy(); ok {
		go pruneRuns(ctx, db, pol, log)
	}
	go pruneHookSignatures(ctx, db, hookSignaturePrunePeriod, log)
	if !*noExamples {
		if err := loadExamples(ctx, db, log); err != nil {
			fmt.Fprintf(stderr, "studio: load examples: %v\n", err)
			return exitFailed
		}
	}
	codeRunner, closeCode, err := codeOpts.runner(true)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer closeCode()
	reg := builtinRegistry(builtin.Options{Workspace: *workspace, ProcAllow: allowProc, ProcAllowEnv: allowProcEnv, HTTPAllowPrivate: *allowPrivate, TemplateBudget: tplBudget, Code: codeRunner})
	mcpHost, err := startMCP(ctx, db, vlt, reg, mcpf, log)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	defer mcpHost.Close()
	agents, err := agent.LoadDir(*agentsDir, agent.LoadOptions{Tools: agentToolKnown(reg)})
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	if agents.Len() > 0 {
		log.Info("loaded agents", "count", agents.Len(), "dir", *agentsDir)
	}
	recordAddress := func(url string) {
		if db.listening == nil {
			return
		}
		if err := db.listening(url); err != nil {
			log.Warn("could not record the address in the database lock file", "err", err)
		}
	}
	return serveRuns(ctx, serveConfig{allowPrivate: *allowPrivate, modelHTTP: builtin.ModelHTTPClient(*modelAllowPrivate), addr: *addr, token: *token, insecure: *insecure, publicURL: *publicURL, trustedProxies: trustedProxies, dbPath: db.name, listening: recordAddress, gov: gov, a2e: a2eSess, limits: budgets.limits, exprBudget: exprBudget, pg: db.pg, noWorker: !*worker, lease: lease, tracer: tracer, prices: prices, vault: vlt, streams: streams, mcp: mcpHost}, db, reg, agents, log, stderr)
}

// approvalSweepPeriod is how often pending approvals' deadlines and
// escalations are looked at: a deadline fires at most this late.
const approvalSweepPeriod = 5 * time.Second

type serveConfig struct {
	addr, token, publicURL, dbPath string
	insecure                       bool
	trustedProxies                 []netip.Prefix   // --trusted-proxy
	allowPrivate                   bool             // escalation webhooks may reach private addresses (--http-allow-private)
	modelHTTP                      *http.Client     // agents' model calls (builtin.ModelHTTPClient, --model-allow-private)
	listening                      func(url string) // called once the server listens
	gov                            governorFlags
	a2e                            a2eSessionFlags // A2E HTTP sessions' bounds; nil fields: defaults
	limits                         engine.Limits   // run budgets and ceilings; zero fields: defaults
	exprBudget                     expr.Budget
	pg                             *postgres.DB      // PostgreSQL: runs are River jobs
	noWorker                       bool              // PostgreSQL: insert jobs only, execute none here
	lease                          leaseFlags        // PostgreSQL: run ownership timings
	tracer                         *telemetry.Tracer // nil: no tracing (no OTEL_* variables)
	prices                         *pricing.Prices   // nil: no --prices
	vault                          *vault.Vault      // the credentials chains use by name
	mcp                            *mcphost.Host     // the registered MCP servers' connections
	streams                        streamFlags       // bounds of streaming responses; nil fields: web's defaults
}

// serveRuns builds the run service (with its event writer on the store) and
// the HTTP server on an open store, and serves until ctx ends. Stopping runs
// in reverse: the runs are cancelled (resumable) and the server stops, then
// the run service stores its last events; the caller closes the store after
// that.
func serveRuns(ctx context.Context, cfg serveConfig, db store.Backend, reg *engine.Registry, agents *agent.Set, log *slog.Logger, stderr io.Writer) int {
	metrics := web.NewMetrics()
	opts := runs.Options{Store: db, Registry: reg, Agents: agents, Logger: log, Observer: metrics, Limits: cfg.limits, ExprBudget: cfg.exprBudget, ModelHTTP: cfg.modelHTTP}
	if cfg.vault != nil {
		opts.Credentials = cfg.vault
	}
	cfg.gov.applyTo(&opts)
	var prop propagation.TextMapPropagator
	if cfg.tracer != nil {
		opts.Tracer, prop = cfg.tracer, cfg.tracer.Propagator()
	}
	var queue *riverqueue.Queue
	if cfg.pg != nil {
		var err error
		workers := opts.MaxRunning
		if cfg.noWorker {
			workers = 0
		}
		var ttl, reap time.Duration
		if cfg.lease.ttl != nil {
			cfg.lease.applyTo(&opts)
			ttl, reap = *cfg.lease.ttl, *cfg.lease.reap
		}
		if queue, err = riverqueue.New(cfg.pg, riverqueue.Options{Workers: workers, Logger: log, LeaseTTL: ttl, ReapEvery: reap}); err != nil {
			fmt.Fprintf(stderr, "studio: %v\n", err)
			return exitFailed
		}
		opts.Dispatcher = queue
		cfg.pg.NotifyEvents(true)
		opts.EventHints = cfg.pg.ListenEvents(ctx)
	}
	svc, err := runs.New(opts)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	// The runs accepted before the last stop that never started, left
	// queued by RecoverInterrupted, wait in line again (a no-op with River:
	// its jobs outlive the process).
	if n, err := svc.Requeue(ctx, db); err != nil {
		svc.Close()
		fmt.Fprintf(stderr, "studio: queue again the runs accepted before the last stop: %v\n", err)
		return exitFailed
	} else if n > 0 {
		log.Info("queued again the runs accepted before the last stop that had not started", "runs", n)
	}
	if queue != nil {
		if err := queue.Start(ctx, svc); err != nil {
			svc.Close()
			fmt.Fprintf(stderr, "studio: %v\n", err)
			return exitFailed
		}
		defer stopQueue(queue, log)
	}
	// Every serving process runs the scheduler: on PostgreSQL a tick is
	// still fired once (its firing row is unique, written with its run and
	// job in one transaction).
	sched, err := runs.NewScheduler(runs.SchedulerOptions{Store: db, Starter: svc, Logger: log})
	if err != nil {
		svc.Close()
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	wcfg := web.Config{Addr: cfg.addr, Token: cfg.token, Insecure: cfg.insecure, PublicURL: cfg.publicURL, TrustedProxies: cfg.trustedProxies, Logger: log, Limits: cfg.limits}
	cfg.a2e.applyTo(&wcfg)
	cfg.streams.applyTo(&wcfg)
	templates, err := chainTemplates()
	if err != nil {
		svc.Close()
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	srv, err := web.New(wcfg,
		web.Deps{DB: db, Runs: svc, Registry: reg, Agents: agents, Metrics: metrics, Scheduler: sched, Prices: cfg.prices, Propagator: prop, Vault: cfg.vault, ModelHTTP: cfg.modelHTTP, MCP: cfg.mcp, Templates: templates})
	if err != nil {
		svc.Close()
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	schedCtx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); sched.Run(schedCtx) }()
	// Approval deadlines and escalations; on PostgreSQL every serve process
	// sweeps, and the claims make each answer and notification happen once.
	// Started once the server could be built, and stopped before the store
	// closes (a sweep on a closed store only logs errors).
	sweeper := runs.NewSweeper(runs.SweeperOptions{Store: db, Runs: svc, Logger: log,
		Notify: builtin.GuardedClient(builtin.Options{HTTPAllowPrivate: cfg.allowPrivate})})
	sweepDone := make(chan struct{})
	go func() { defer close(sweepDone); sweeper.Run(schedCtx, approvalSweepPeriod) }()
	err = srv.ListenAndServe(ctx, func(url string) {
		if cfg.listening != nil {
			cfg.listening(url)
		}
		log.Info("Chain Studio is running", "url", url, "db", cfg.dbPath)
	})
	stopSched() // the scheduler and the sweeper stop before the run service
	<-schedDone
	<-sweepDone
	if cerr := svc.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("store the last events: %w", cerr))
	}
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// stopQueue stops a River queue after the run service's Shutdown
// cancelled its runs.
func stopQueue(q *riverqueue.Queue, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := q.Stop(ctx); err != nil {
		log.Warn("river: stop", "err", err)
	}
}

// checkServeSecurity refuses, before anything starts, a token short enough
// to guess and a --public-url the studio could not match Host headers with.
func checkServeSecurity(token, publicURL string) error {
	if token != "" && len(token) < web.MinTokenLength {
		return fmt.Errorf("the token (--token or STUDIO_TOKEN) has %d characters; use at least %d, for example the output of `openssl rand -hex 16`", len(token), web.MinTokenLength)
	}
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return fmt.Errorf("--public-url %q: want an http:// or https:// URL with a host, such as https://studio.example.org", publicURL)
		}
	}
	return nil
}

// pruneRuns applies the run-retention policy now and then daily. Chains and
// their versions are never pruned.
func pruneRuns(ctx context.Context, db store.Housekeeping, pol store.Retention, log *slog.Logger) {
	t := time.NewTicker(24 * time.Hour)
	defer t.Stop()
	for {
		if n, err := db.PruneRuns(ctx, pol); err != nil {
			if ctx.Err() == nil {
				log.Error("prune runs", "err", err)
			}
		} else if n > 0 {
			log.Info("pruned old runs", "runs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hookSignaturePrunePeriod is how often the webhook signatures whose window
// has passed are deleted (they refuse nothing once expired; this bounds the
// table to about one period of accepted calls).
const hookSignaturePrunePeriod = 10 * time.Minute

// pruneHookSignatures deletes expired webhook signature digests every
// period until ctx ends.
func pruneHookSignatures(ctx context.Context, db store.Housekeeping, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := db.PruneHookSignatures(ctx, time.Now()); err != nil {
			if ctx.Err() == nil {
				log.Warn("prune webhook signatures", "err", err)
			}
		} else if n > 0 {
			log.Debug("pruned expired webhook signatures", "count", n)
		}
	}
}

// loadExamples saves the example chains into an empty database.
// chainTemplates are the templates New chain… offers (examples/templates).
func chainTemplates() ([]web.Template, error) {
	all, err := examples.Templates()
	if err != nil {
		return nil, fmt.Errorf("the chain templates: %w", err)
	}
	out := make([]web.Template, len(all))
	for i, t := range all {
		out[i] = web.Template{ID: t.ID, Data: t.Data}
	}
	return out, nil
}

func loadExamples(ctx context.Context, db store.ChainStore, log *slog.Logger) error {
	_, total, err := db.ListChains(ctx, store.ChainFilter{Limit: 1})
	if err != nil || total > 0 {
		return err
	}
	all, err := examples.All()
	if err != nil {
		return err
	}
	for _, ex := range all {
		c, err := engine.Decode(ex.Data, engine.Limits{})
		if err != nil {
			return fmt.Errorf("%s: %w", ex.File, err)
		}
		if _, err := db.CreateChain(ctx, c, "example"); err != nil {
			return fmt.Errorf("%s: %w", ex.File, err)
		}
	}
	log.Info("loaded example chains", "count", len(all))
	return nil
}

// budgetFlags are the runaway-work budgets, shared by serve and run: the
// expression and template budgets, and each run's budgets and ceilings.
type budgetFlags struct {
	exprElems, exprBytes, tplSteps, tplBytes *int64
	nodeExecs, mapItems, iterations, depth   *int
	outputBytes, storedBytes                 *int64
	chainTimeout                             *float64
	limits                                   engine.Limits // set by values
}

func registerBudgets(fs *flag.FlagSet) budgetFlags {
	d := engine.DefaultLimits
	return budgetFlags{
		nodeExecs:    fs.Int("max-node-executions", d.MaxNodeExecutions, "end a run that starts more than `N` nodes, map items and branches included (budget node_executions)"),
		outputBytes:  fs.Int64("max-output-bytes", d.MaxOutputBytes, "end a run whose node outputs held in memory pass `BYTES` (budget output_bytes)"),
		storedBytes:  fs.Int64("max-stored-bytes", d.MaxStoredBytes, "end a run whose events and checkpoints pass `BYTES` (budget stored_bytes)"),
		mapItems:     fs.Int("max-map-items", d.MaxMapItems, "end a run whose map node fans out over more than `N` items (budget map_items)"),
		chainTimeout: fs.Float64("max-chain-timeout", d.MaxChainTimeout, "refuse chains whose timeout is over `SECONDS`; it also bounds the default timeout"),
		iterations:   fs.Int("max-iterations", d.MaxIterations, "refuse chains with a loop edge whose max_iterations is over `N`"),
		depth:        fs.Int("max-depth", d.MaxDepth, "refuse chains whose max_depth (sub-chain nesting) is over `N`"),
		exprElems:    fs.Int64("expr-max-elements", expr.DefaultBudget.MaxElements, "stop an expression evaluation that builds more than `N` values (budget expr_elements)"),
		exprBytes:    fs.Int64("expr-max-bytes", expr.DefaultBudget.MaxBytes, "stop an expression evaluation that builds more than `BYTES` of values (budget expr_bytes)"),
		tplSteps:     fs.Int64("template-max-steps", builtin.DefaultTemplateBudget.Steps, "stop a template rendering after `N` loop iterations, template calls and function calls (budget template_steps)"),
		tplBytes:     fs.Int64("template-max-bytes", builtin.DefaultTemplateBudget.Bytes, "stop a template rendering whose functions build more than `BYTES` in all (budget template_bytes)"),
	}
}

// values checks the flags, keeps the run limits in b.limits and returns
// the budgets for the engine and the template tool (options, not
// process-wide settings: tests run several hosts with different budgets in
// one process).
func (b *budgetFlags) values() (expr.Budget, builtin.TemplateBudget, error) {
	if *b.exprElems <= 0 || *b.exprBytes <= 0 || *b.tplSteps <= 0 || *b.tplBytes <= 0 {
		return expr.Budget{}, builtin.TemplateBudget{}, errors.New("--expr-max-elements, --expr-max-bytes, --template-max-steps and --template-max-bytes must be positive")
	}
	if *b.nodeExecs <= 0 || *b.mapItems <= 0 || *b.iterations <= 0 || *b.depth <= 0 || *b.outputBytes <= 0 || *b.storedBytes <= 0 || !(*b.chainTimeout > 0) {
		return expr.Budget{}, builtin.TemplateBudget{}, errors.New("--max-node-executions, --max-output-bytes, --max-stored-bytes, --max-map-items, --max-chain-timeout, --max-iterations and --max-depth must be positive")
	}
	b.limits = engine.Limits{MaxNodeExecutions: *b.nodeExecs, MaxOutputBytes: *b.outputBytes, MaxStoredBytes: *b.storedBytes,
		MaxMapItems: *b.mapItems, MaxChainTimeout: *b.chainTimeout, MaxIterations: *b.iterations, MaxDepth: *b.depth}
	return expr.Budget{MaxElements: *b.exprElems, MaxBytes: *b.exprBytes}, builtin.TemplateBudget{Steps: *b.tplSteps, Bytes: *b.tplBytes}, nil
}

// governorFlags bound what runs and watchers may hold at once (serve only).
// A nil field (a test's serveConfig) keeps the run service's default.
type governorFlags struct {
	maxRunning, maxQueued, maxWatchers, maxWatchersPerRun *int
}

func registerGovernor(fs *flag.FlagSet) governorFlags {
	return governorFlags{
		maxRunning:        fs.Int("max-running-runs", runs.DefaultMaxRunning(), "execute at most `N` runs at once; the others wait in line as queued (default: 8 per core)"),
		maxQueued:         fs.Int("max-queued-runs", 1000, "let at most `N` runs wait for a slot; more are refused with 429 and Retry-After"),
		maxWatchers:       fs.Int("max-watchers", 2000, "stream live events to at most `N` watchers in all; more are refused with 503 and Retry-After"),
		maxWatchersPerRun: fs.Int("max-watchers-per-run", 200, "stream one run's live events to at most `N` watchers"),
	}
}

func (g governorFlags) check() error {
	for name, v := range map[string]*int{"--max-running-runs": g.maxRunning, "--max-queued-runs": g.maxQueued, "--max-watchers": g.maxWatchers, "--max-watchers-per-run": g.maxWatchersPerRun} {
		if v != nil && *v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", name, *v)
		}
	}
	return nil
}

func (g governorFlags) applyTo(o *runs.Options) {
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&o.MaxRunning, g.maxRunning)
	set(&o.MaxQueued, g.maxQueued)
	set(&o.MaxWatchers, g.maxWatchers)
	set(&o.MaxWatchersPerRun, g.maxWatchersPerRun)
}

// a2eSessionFlags bound the A2E HTTP sessions (serve only). A nil field (a
// test's serveConfig) keeps the server's default.
type a2eSessionFlags struct {
	maxSessions, perUser *int
	idle                 *time.Duration
	bytes                *int64
}

func registerA2ESessions(fs *flag.FlagSet) a2eSessionFlags {
	return a2eSessionFlags{
		maxSessions: fs.Int("a2e-max-sessions", 64, "keep at most `N` A2E HTTP sessions open in all; more are refused with 429"),
		perUser:     fs.Int("a2e-max-sessions-per-user", 8, "keep at most `N` A2E HTTP sessions open per user; more are refused with 429"),
		idle:        fs.Duration("a2e-session-idle", 10*time.Minute, "close an A2E HTTP session after `DURATION` with no send, nothing delivered and no chain in flight, its stream too"),
		bytes:       fs.Int64("a2e-session-bytes", 32<<20, "let one A2E HTTP session hold at most `BYTES` for its agent (answers queued or in flight); sends past it are refused with 503 stream_not_read"),
	}
}

func (f a2eSessionFlags) check() error {
	for name, v := range map[string]*int{"--a2e-max-sessions": f.maxSessions, "--a2e-max-sessions-per-user": f.perUser} {
		if v != nil && *v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", name, *v)
		}
	}
	if f.idle != nil && *f.idle <= 0 {
		return fmt.Errorf("--a2e-session-idle must be positive, got %s", *f.idle)
	}
	// Under 1 MiB a session could hold little more than one chain/req.
	if f.bytes != nil && (*f.bytes < 1<<20 || *f.bytes > 1<<40) {
		return fmt.Errorf("--a2e-session-bytes must be between 1 MiB and 1 TiB, got %d", *f.bytes)
	}
	return nil
}

func (f a2eSessionFlags) applyTo(c *web.Config) {
	if f.maxSessions != nil {
		c.A2EMaxSessions = *f.maxSessions
	}
	if f.perUser != nil {
		c.A2EMaxSessionsPerUser = *f.perUser
	}
	if f.idle != nil {
		c.A2ESessionIdle = *f.idle
	}
	if f.bytes != nil {
		c.A2ESessionBytes = int(*f.bytes)
	}
}

// shutdownTracer exports the spans still buffered when the studio stops.
func shutdownTracer(t *telemetry.Tracer, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "studio: export the last spans: %v\n", err)
	}
}

// otlpEndpoint is where traces go, for the start-up log line.
func otlpEndpoint() string {
	if e := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); e != "" {
		return e
	}
	if e := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
		return e
	}
	return "http://localhost:4318 (the OTLP default)"
}

// streamFlags bound what streaming responses (event streams, A2E streams)
// hold for a client that does not read (serve only). A nil field (a test's
// serveConfig) keeps the server's default.
type streamFlags struct {
	writeTimeout             *time.Duration
	bufferBytes, bufferTotal *int64
}

func registerStreams(fs *flag.FlagSet) streamFlags {
	return streamFlags{
		writeTimeout: fs.Duration("stream-write-timeout", 30*time.Second, "disconnect a streaming client (run events, A2E) that does not take a write within `DURATION`, and release what was held for it"),
		bufferBytes:  fs.Int64("stream-buffer-bytes", 256<<10, "buffer at most `BYTES` of frames for one streaming connection before writing them (one larger frame is held alone)"),
		bufferTotal:  fs.Int64("stream-buffer-total", 16<<20, "buffer at most `BYTES` for all streaming connections together; a stream with no room waits (within --stream-write-timeout)"),
	}
}

func (f streamFlags) check() error {
	if f.writeTimeout != nil && *f.writeTimeout <= 0 {
		return fmt.Errorf("--stream-write-timeout must be positive, got %v", *f.writeTimeout)
	}
	for name, v := range map[string]*int64{"--stream-buffer-bytes": f.bufferBytes, "--stream-buffer-total": f.bufferTotal} {
		if v != nil && *v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", name, *v)
		}
	}
	if f.bufferBytes != nil && f.bufferTotal != nil && *f.bufferBytes > *f.bufferTotal {
		return fmt.Errorf("--stream-buffer-bytes (%d) must not be over --stream-buffer-total (%d)", *f.bufferBytes, *f.bufferTotal)
	}
	return nil
}

func (f streamFlags) applyTo(c *web.Config) {
	if f.writeTimeout != nil {
		c.StreamWriteTimeout = *f.writeTimeout
	}
	if f.bufferBytes != nil {
		c.StreamBufferBytes = int(min(*f.bufferBytes, 1<<30))
	}
	if f.bufferTotal != nil {
		c.StreamBufferTotal = *f.bufferTotal
	}
}
