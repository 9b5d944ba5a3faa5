package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/examples"
	"github.com/chainstudio/studio/internal/telemetry"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/runs/riverqueue"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web"
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serveFlags are serve's flags beside Main's: HTTP, examples, prices and
// retention.
type serveFlags struct {
	addr, token, publicURL, prices *string
	insecure, noExamples, verbose  *bool
	worker                         *bool // on PostgreSQL, also execute runs here
	viewersSeeCredentialed         *bool // viewers and approvers see credentialed calls' outputs
	trustedProxies                 prefixListFlag
	a2e                            a2eSessionFlags
	streams                        streamFlags
	keep                           retention
	spend                          spendFlags
}

func registerServe(fs *flag.FlagSet) *serveFlags {
	f := &serveFlags{
		addr:      fs.String("addr", envOr("STUDIO_ADDR", "127.0.0.1:8080"), "listen on `ADDR`, HOST:PORT (env STUDIO_ADDR); anything but loopback needs --token or --insecure"),
		token:     fs.String("token", os.Getenv("STUDIO_TOKEN"), "bearer `TOKEN` required by the API and pages (env STUDIO_TOKEN)"),
		insecure:  fs.Bool("insecure", false, "allow listening off loopback without a token"),
		publicURL: fs.String("public-url", os.Getenv("STUDIO_PUBLIC_URL"), "the `URL` people reach the studio at, behind a proxy (env STUDIO_PUBLIC_URL): its host is accepted besides the listen address and loopback names, and https makes the sign-in cookie Secure"),
	}
	fs.Var(&f.trustedProxies, "trusted-proxy", "take the client's address from X-Forwarded-For (its rightmost hop outside these ranges) when the peer is in the `CIDR` (repeatable; default: none, the header is ignored)")
	f.noExamples = fs.Bool("no-examples", false, "do not load the example chains into an empty database")
	f.verbose = fs.Bool("v", false, "log every request")
	f.prices = fs.String("prices", os.Getenv("STUDIO_PRICES"), "a YAML price table `FILE`: model name → {input, output}, the prices of a million tokens (env STUDIO_PRICES); without it, tokens are shown without cost")
	f.viewersSeeCredentialed = fs.Bool("viewers-see-credentialed-output", false, "show viewers and approvers the outputs of calls that carried a stored credential (an http request's auth); by default only editors, publishers and admins see them, since servers echo what they are sent")
	f.worker = fs.Bool("worker", true, "on PostgreSQL, also execute runs in this process (--worker=false: API and pages only, runs go to studio worker processes)")
	f.a2e = registerA2ESessions(fs)
	f.streams = registerStreams(fs)
	f.keep.register(fs)
	f.spend = registerSpend(fs)
	return f
}

// check refuses the bounds among serve's own flags that are out of range
// (checkServeSecurity looks at the token and the public URL first).
func (f *serveFlags) check() error {
	if err := f.a2e.check(); err != nil {
		return err
	}
	return f.streams.check()
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	m := newMain(fs, mainFlags{
		db: envOr("STUDIO_DB", "studio.db"), dbUsage: "the database: a SQLite `FILE`, or a postgres:// URL (env STUDIO_DB)",
		keyUsage: "the credentials key `FILE`, 64 hex digits, mode 0600 (env STUDIO_CREDENTIALS_KEY_FILE, or the key itself in STUDIO_CREDENTIALS_KEY); default on SQLite: the database's path + .key, created on first start; on PostgreSQL every process needs the same key, and without one credentials are off",
	})
	f := registerServe(fs)
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
	if err := checkServeSecurity(*f.token, *f.publicURL); err != nil {
		return fail(stderr, usageError{err})
	}
	if err := m.check(); err != nil {
		return fail(stderr, usageError{err})
	}
	if err := f.check(); err != nil {
		return fail(stderr, usageError{err})
	}
	var prices *pricing.Prices
	if *f.prices != "" {
		var err error
		if prices, err = web.LoadPrices(*f.prices); err != nil {
			return fail(stderr, usageError{fmt.Errorf("--prices: %w", err)})
		}
	}
	if err := f.spend.check(prices); err != nil {
		return fail(stderr, usageError{err})
	}
	if *f.verbose {
		m.Level = slog.LevelDebug
	}
	// Main's steps, with serve's own between them.
	defer m.Close()
	if err := m.openLog(ctx, stderr); err != nil {
		return fail(stderr, err)
	}
	log := m.Log
	if prices != nil {
		log.Info("loaded model prices", "models", prices.Len(), "file", *f.prices)
	}
	if err := m.openStore(ctx); err != nil {
		return fail(stderr, err)
	}
	if src := m.keySource(); m.Vault.Enabled() {
		log.Info("credentials are sealed with the key in "+src.describe()+"; back it up with the database", "key", src.describe())
	} else {
		log.Info("credentials are off: no credentials key (--credentials-key-file or " + keyEnv + ")")
	}
	if pol, ok := f.keep.policy(); ok {
		go pruneRuns(ctx, m.DB, pol, log)
	}
	go pruneHookSignatures(ctx, m.DB, hookSignaturePrunePeriod, log)
	if !*f.noExamples {
		if err := loadExamples(ctx, m.DB, log); err != nil {
			return fail(stderr, fmt.Errorf("load examples: %w", err))
		}
	}
	if err := m.openTools(ctx); err != nil {
		return fail(stderr, err)
	}
	if m.Agents.Len() > 0 {
		log.Info("loaded agents", "count", m.Agents.Len(), "dir", *m.agentsDir)
	}
	return serveRuns(ctx, m, f, prices, stderr)
}

// approvalSweepPeriod is how often pending approvals' deadlines and
// escalations are looked at: a deadline fires at most this late.
const approvalSweepPeriod = 5 * time.Second

// serveRuns builds the run service (with its event writer on the store) and
// the HTTP server on what m opened, and serves until ctx ends. Stopping
// runs in reverse: the runs are cancelled (resumable) and the server
// stops, then the run service stores its last events; the caller closes
// m after that.
func serveRuns(ctx context.Context, m *Main, f *serveFlags, prices *pricing.Prices, stderr io.Writer) int {
	db, log := m.DB, m.Log
	metrics := web.NewMetrics()
	opts := m.runOptions()
	opts.Observer = metrics
	opts.Prices = prices
	us, _ := opts.Store.(store.UsageStore)
	budgets, err := f.spend.budgets(ctx, us, prices, time.Now())
	if err != nil {
		return fail(stderr, err)
	}
	opts.Budgets = budgets
	var prop propagation.TextMapPropagator
	if m.Tracer != nil {
		prop = m.Tracer.Propagator()
	}
	// SQLite: this process executes its runs. PostgreSQL: runs are River
	// jobs that any process sharing the database executes.
	opts.Executor = runs.Embedded()
	var queue *riverqueue.Queue
	var dist *runs.Distributed
	if db.pg != nil {
		workers := opts.MaxRunning
		if !*f.worker {
			workers = 0
		}
		var err error
		if queue, dist, err = m.queue(ctx, &opts, workers, true); err != nil {
			return fail(stderr, err)
		}
	}
	svc, err := runs.New(opts)
	if err != nil {
		return fail(stderr, err)
	}
	// The runs accepted before the last stop that never started, left
	// queued by RecoverInterrupted, wait in line again (a no-op with River:
	// its jobs outlive the process).
	if n, err := svc.Requeue(ctx, db); err != nil {
		svc.Close()
		return fail(stderr, fmt.Errorf("queue again the runs accepted before the last stop: %w", err))
	} else if n > 0 {
		log.Info("queued again the runs accepted before the last stop that had not started", "runs", n)
	}
	if queue != nil {
		if err := queue.Start(ctx, dist); err != nil {
			svc.Close()
			return fail(stderr, err)
		}
		defer stopQueue(queue, log)
	}
	// Every serving process runs the scheduler: on PostgreSQL a tick is
	// still fired once (its firing row is unique, written with its run and
	// job in one transaction).
	sched, err := runs.NewScheduler(runs.SchedulerOptions{Store: db, Starter: svc, Logger: log})
	if err != nil {
		svc.Close()
		return fail(stderr, err)
	}
	wcfg := web.Config{Addr: *f.addr, Token: *f.token, Insecure: *f.insecure, ModelAllowPrivate: *m.modelAllowPrivate,
		ViewersSeeCredentialed: *f.viewersSeeCredentialed, PublicURL: *f.publicURL,
		TrustedProxies: f.trustedProxies, Logger: log, Limits: m.budgets.limits}
	f.a2e.applyTo(&wcfg)
	f.streams.applyTo(&wcfg)
	templates, err := chainTemplates()
	if err != nil {
		svc.Close()
		return fail(stderr, err)
	}
	srv, err := web.New(wcfg,
		web.Deps{DB: db, Runs: svc, Registry: m.Registry, Agents: m.Agents, Providers: modelProviders, Metrics: metrics, Scheduler: sched, Prices: prices,
			Propagator: prop, Vault: m.Vault, ModelHTTP: m.ModelHTTP, MCP: m.MCP, Templates: templates})
	if err != nil {
		svc.Close()
		return fail(stderr, usageError{err})
	}
	schedCtx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); sched.Run(schedCtx) }()
	// Approval deadlines and escalations; on PostgreSQL every serve process
	// sweeps, and the claims make each answer and notification happen once.
	// Started once the server could be built, and stopped before the store
	// closes (a sweep on a closed store only logs errors). Escalation
	// webhooks reach private addresses as the http tool does.
	sweeper := runs.NewSweeper(runs.SweeperOptions{Store: db, Runs: svc, Logger: log,
		Notify: builtin.GuardedClient(builtin.Options{HTTPAllowPrivate: *m.httpAllowPrivate})})
	sweepDone := make(chan struct{})
	go func() { defer close(sweepDone); sweeper.Run(schedCtx, approvalSweepPeriod) }()
	err = srv.ListenAndServe(ctx, func(url string) {
		if db.listening != nil {
			if err := db.listening(url); err != nil {
				log.Warn("could not record the address in the database lock file", "err", err)
			}
		}
		log.Info("Chain Studio is running", "url", url, "db", db.name)
	})
	stopSched() // the scheduler and the sweeper stop before the run service
	<-schedDone
	<-sweepDone
	if cerr := svc.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("store the last events: %w", cerr))
	}
	if err != nil {
		return fail(stderr, err)
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
		if pol.OlderThan > 0 {
			// agents' memory is kept as long as the runs that wrote it
			if n, err := db.PruneConversations(ctx, time.Now().Add(-pol.OlderThan)); err != nil {
				if ctx.Err() == nil {
					log.Error("prune conversations", "err", err)
				}
			} else if n > 0 {
				log.Info("pruned old conversation turns", "turns", n)
			}
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
		c, err := chain.Decode(ex.Data, chain.Limits{})
		if err != nil {
			return fmt.Errorf("%s: %w", ex.File, err)
		}
		if _, err := db.CreateChain(ctx, c, "example", true); err != nil {
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
	limits                                   chain.Limits // set by values
}

func registerBudgets(fs *flag.FlagSet) budgetFlags {
	d := chain.DefaultLimits
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
	b.limits = chain.Limits{MaxNodeExecutions: *b.nodeExecs, MaxOutputBytes: *b.outputBytes, MaxStoredBytes: *b.storedBytes,
		MaxMapItems: *b.mapItems, MaxChainTimeout: *b.chainTimeout, MaxIterations: *b.iterations, MaxDepth: *b.depth}
	return expr.Budget{MaxElements: *b.exprElems, MaxBytes: *b.exprBytes}, builtin.TemplateBudget{Steps: *b.tplSteps, Bytes: *b.tplBytes}, nil
}

// governorFlags bound what runs and watchers may hold at once (serve and
// worker). A nil field (a zero governorFlags) keeps the run service's
// default.
type governorFlags struct {
	maxRunning, maxQueued, maxWatchers, maxWatchersPerRun *int
	maxMemory                                             *int64
}

func registerGovernor(fs *flag.FlagSet) governorFlags {
	return governorFlags{
		maxRunning:        fs.Int("max-running-runs", runs.DefaultMaxRunning(), "execute at most `N` runs at once; the others wait in line as queued (default: 8 per core)"),
		maxQueued:         fs.Int("max-queued-runs", 1000, "let at most `N` runs wait for a slot; more are refused with 429 and Retry-After"),
		maxWatchers:       fs.Int("max-watchers", 2000, "stream live events to at most `N` watchers in all; more are refused with 503 and Retry-After"),
		maxWatchersPerRun: fs.Int("max-watchers-per-run", 200, "stream one run's live events to at most `N` watchers"),
		maxMemory:         fs.Int64("max-memory", 0, "the process's memory budget in `BYTES` (0: none): new runs wait as queued while the live heap is over 3/4 of it and another run executes, and the Go collector works harder near it (as GOMEMLIMIT, unless that is set)"),
	}
}

func (g governorFlags) check() error {
	for name, v := range map[string]*int{"--max-running-runs": g.maxRunning, "--max-queued-runs": g.maxQueued, "--max-watchers": g.maxWatchers, "--max-watchers-per-run": g.maxWatchersPerRun} {
		if v != nil && *v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", name, *v)
		}
	}
	if g.maxMemory != nil && *g.maxMemory < 0 {
		return fmt.Errorf("--max-memory must be 0 (no budget) or a number of bytes, got %d", *g.maxMemory)
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
	if g.maxMemory != nil && *g.maxMemory > 0 {
		o.MaxMemory = *g.maxMemory
		if os.Getenv("GOMEMLIMIT") == "" { // the operator's own limit wins
			debug.SetMemoryLimit(*g.maxMemory)
		}
	}
}

// a2eSessionFlags bound the A2E HTTP sessions (serve only). A nil field
// keeps the server's default.
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
// hold for a client that does not read (serve only). A nil field keeps the
// server's default.
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
