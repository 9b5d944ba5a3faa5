package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres"
	"github.com/chainstudio/studio/store/sqlite"
)

// cmdBackup writes a consistent copy of the database while the studio may be
// running (SQLite's VACUUM INTO reads one snapshot).
func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", envOr("STUDIO_DB", "studio.db"), "SQLite database `FILE` to copy (env STUDIO_DB)")
	fs.Usage = func() {
		printUsage(fs, "studio backup TARGET [--db FILE]",
			"Writes a consistent copy of the database to TARGET (which must not exist),\nsafely while the studio is running.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, args, "TARGET") {
		return exitUsage
	}
	target := args[0]
	if postgres.IsDSN(*dbPath) {
		fmt.Fprintf(stderr, "studio: the database is on PostgreSQL (%s): back it up with pg_dump, e.g. pg_dump --format=custom --file=studio.dump DATABASE_URL (docs/deploy.md); studio backup copies SQLite files only\n", redactDSN(*dbPath))
		return exitFailed
	}
	db, err := sqlite.Open(ctx, *dbPath, sqlite.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer db.Close()
	start := time.Now()
	if err := db.Backup(ctx, target); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "backed up %s to %s in %d ms\n", *dbPath, target, time.Since(start).Milliseconds())
	return exitOK
}

// retention reads the run-retention flags of serve.
type retention struct {
	days int
	keep int
}

func (r *retention) register(fs *flag.FlagSet) {
	fs.IntVar(&r.days, "retain-days", 0, "delete finished runs (and their events) older than this many `DAYS`, at start-up and daily; 0 keeps them")
	fs.IntVar(&r.keep, "retain-runs", 0, "keep at most `N` finished runs per chain; 0 keeps them all")
}

func (r *retention) policy() (store.Retention, bool) {
	p := store.Retention{OlderThan: time.Duration(r.days) * 24 * time.Hour, KeepPerChain: r.keep}
	return p, r.days > 0 || r.keep > 0
}
