package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/chainstudio/studio/runs"
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
	m := newMain(fs, mainFlags{
		db: os.Getenv("STUDIO_DB"), dbUsage: "the PostgreSQL database, a postgres:// `URL` (env STUDIO_DB)",
		keyUsage: "the credentials key `FILE` the servers use (env STUDIO_CREDENTIALS_KEY_FILE, or the key itself in STUDIO_CREDENTIALS_KEY); without one, runs that use credentials fail",
	})
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
	if !postgres.IsDSN(*m.dsn) {
		fmt.Fprintf(stderr, "studio worker: --db must be a postgres:// URL (workers share a PostgreSQL database with the servers); got %q\n", *m.dsn)
		return exitUsage
	}
	if err := m.check(); err != nil {
		return fail(stderr, usageError{err})
	}
	defer m.Close()
	if err := m.Open(ctx, stderr); err != nil {
		return fail(stderr, err)
	}
	opts := m.runOptions()
	opts.Events.Interval = workerEventInterval
	queue, dist, err := m.queue(ctx, &opts, opts.MaxRunning, false)
	if err != nil {
		return fail(stderr, err)
	}
	svc, err := runs.New(opts)
	if err != nil {
		return fail(stderr, err)
	}
	if err := queue.Start(ctx, dist); err != nil {
		svc.Close()
		return fail(stderr, err)
	}
	m.Log.Info("Chain Studio worker is running", "db", m.DB.name, "slots", opts.MaxRunning)
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
	if err = errors.Join(err, <-stopped, svc.Close()); err != nil {
		return fail(stderr, err)
	}
	m.Log.Info("Chain Studio worker stopped")
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

// applyTo sets the distributed executor's lease options.
func (l leaseFlags) applyTo(o *runs.DistributedOptions) {
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
