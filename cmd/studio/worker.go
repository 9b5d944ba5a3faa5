package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/internal/telemetry"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/runs/riverqueue"
	"github.com/chainstudio/studio/store/postgres"
)

// workerEventInterval is how long a worker's event writer gathers events
// before it stores them (the embedded studio: 20 ms). Its watchers are in
// other processes and hear of a batch through the database anyway; fewer,
// larger batches cost PostgreSQL and the worker ~8 % less CPU per run
// (docs/benchmarks.md), for ~10 ms more at the median. A run's end still
// flushes at once.
const workerEventInterval = 50 * time.Millisecond

// cmdWorker executes runs from a PostgreSQL database's River queue, without
// HTTP: any number of them beside the `serve` processes.
func cmdWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbURL := fs.String("db", os.Getenv("STUDIO_DB"), "the PostgreSQL database, a postgres:// `URL` (env STUDIO_DB)")
	workspace := fs.String("workspace", "", "let read_file/write_file use the folder `DIR` (default: file access disabled)")
	var allowProc listFlag
	fs.Var(&allowProc, "allow-proc", "let proc nodes run the executable `NAME` (repeatable; default: none)")
	var allowProcEnv envNameFlag
	fs.Var(&allowProcEnv, "allow-proc-env", "let proc nodes set the environment variable `NAME` (repeatable; default: none; LD_* and other loader variables never)")
	allowPrivate := fs.Bool("http-allow-private", false, "let the http tool reach loopback and private addresses")
	var mcpf mcpFlags
	mcpf.register(fs)
	modelAllowPrivate := fs.Bool("model-allow-private", false, "let agents' model calls reach loopback and private addresses (a local Ollama, vLLM or LM Studio); the http tool stays guarded")
	keyFile := fs.String("credentials-key-file", os.Getenv("STUDIO_CREDENTIALS_KEY_FILE"), "the credentials key `FILE` the servers use (env STUDIO_CREDENTIALS_KEY_FILE, or the key itself in STUDIO_CREDENTIALS_KEY); without one, runs that use credentials fail")
	agentsDir := fs.String("agents", envOr("STUDIO_AGENTS", "./agents"), "the folder `DIR` of *.agent.yaml agent definitions (env STUDIO_AGENTS); a missing folder means no agents")
	budgets := registerBudgets(fs)
	codeOpts := registerCode(fs)
	gov := registerGovernor(fs)
	lease := registerLease(fs)
	fs.Usage = func() {
		printUsage(fs, "studio worker --db postgres://… [flags]",
			"Executes runs started through any `studio serve` on the same PostgreSQL database,\n"+
				"without serving HTTP. Give it the same tool and agent flags as the servers.\n"+
				"SIGINT or SIGTERM stops it: its runs end cancelled, resumable.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, args) {
		return exitUsage
	}
	if !postgres.IsDSN(*dbURL) {
		fmt.Fprintf(stderr, "studio worker: --db must be a postgres:// URL (workers share a PostgreSQL database with the servers); got %q\n", *dbURL)
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
	if err := lease.check(); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	tracer, err := telemetry.FromEnv(ctx, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "studio: tracing: %v\n", err)
		return exitUsage
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, nil)
	if tracer != nil {
		handler = telemetry.LogHandler(handler)
		defer shutdownTracer(tracer, stderr)
	}
	log := slog.New(handler)
	db, err := openBackend(ctx, *dbURL, log)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer db.Close()
	codeRunner, closeCode, err := codeOpts.runner(true)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer closeCode()
	reg := builtinRegistry(builtin.Options{Workspace: *workspace, ProcAllow: allowProc, ProcAllowEnv: allowProcEnv, HTTPAllowPrivate: *allowPrivate, TemplateBudget: tplBudget, Code: codeRunner})
	agents, err := agent.LoadDir(*agentsDir, agent.LoadOptions{Tools: agentToolKnown(reg)})
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	vlt, err := openVault(ctx, db, credentialKeySource(*dbURL, *keyFile), log)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	mcpHost, err := startMCP(ctx, db, vlt, reg, mcpf, log)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	defer mcpHost.Close()
	opts := runs.Options{Store: db, Registry: reg, Agents: agents, Logger: log, Limits: budgets.limits, ExprBudget: exprBudget, Credentials: vlt,
		ModelHTTP: builtin.ModelHTTPClient(*modelAllowPrivate)}
	opts.Events.Interval = workerEventInterval
	if tracer != nil {
		opts.Tracer = tracer
	}
	gov.applyTo(&opts)
	lease.applyTo(&opts)
	queue, err := riverqueue.New(db.pg, riverqueue.Options{Workers: opts.MaxRunning, Logger: log, LeaseTTL: *lease.ttl, ReapEvery: *lease.reap})
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	opts.Dispatcher = queue
	// Watchers elsewhere hear of this worker's events at once.
	db.pg.NotifyEvents(true)
	svc, err := runs.New(opts)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	if err := queue.Start(ctx, svc); err != nil {
		svc.Close()
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	log.Info("Chain Studio worker is running", "db", db.name, "slots", opts.MaxRunning)
	<-ctx.Done()
	// Stop fetching first, then cancel what executes (checkpointed,
	// resumable) and wait for the jobs to end.
	stopped := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped <- queue.Stop(sctx)
	}()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = svc.Shutdown(sctx)
	err = errors.Join(err, <-stopped, svc.Close())
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	log.Info("Chain Studio worker stopped")
	return exitOK
}

// leaseFlags are the run-ownership timings of a process that executes runs
// on PostgreSQL (docs/deploy.md, "Ownership"). Give every process the same.
type leaseFlags struct {
	ttl, beat, reap *time.Duration
}

func registerLease(fs *flag.FlagSet) leaseFlags {
	return leaseFlags{
		ttl:  fs.Duration("lease-ttl", runs.DefaultLeaseTTL, "on PostgreSQL, how long a run stays this process's without a heartbeat (`DURATION`); a run whose lease passed is taken over by another worker"),
		beat: fs.Duration("lease-heartbeat", 0, "on PostgreSQL, how often an executing run's lease is renewed and its cancel flag read (`DURATION`; default a third of --lease-ttl, at most half of it)"),
		reap: fs.Duration("reaper-period", 5*time.Second, "on PostgreSQL, how often runs whose lease passed are looked for and taken over (`DURATION`; one process reaps per period)"),
	}
}

// applyTo sets the run service's lease options.
func (l leaseFlags) applyTo(o *runs.Options) {
	o.LeaseTTL, o.LeaseHeartbeat = *l.ttl, *l.beat
}

func (l leaseFlags) check() error {
	if *l.ttl < 300*time.Millisecond {
		return fmt.Errorf("--lease-ttl %v: at least 300ms", *l.ttl)
	}
	if *l.beat < 0 || *l.beat*2 > *l.ttl {
		return fmt.Errorf("--lease-heartbeat %v: between 0 (a third of --lease-ttl) and half of --lease-ttl %v", *l.beat, *l.ttl)
	}
	if *l.reap < 100*time.Millisecond {
		return fmt.Errorf("--reaper-period %v: at least 100ms", *l.reap)
	}
	return nil
}
