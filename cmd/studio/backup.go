package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/chainstudio/studio/store"
)

// cmdBackup writes a consistent copy of the database while the studio may be
// running (SQLite's VACUUM INTO reads one snapshot).
func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", envOr("STUDIO_DB", "studio.db"), "SQLite database file to copy (env STUDIO_DB)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: studio backup [--db FILE] TARGET\n\nWrites a consistent copy of the database to TARGET (which must not exist),\nsafely while the studio is running.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	db, err := store.Open(ctx, *dbPath, store.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer db.Close()
	start := time.Now()
	if err := db.Backup(ctx, fs.Arg(0)); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "backed up %s to %s in %d ms\n", *dbPath, fs.Arg(0), time.Since(start).Milliseconds())
	return exitOK
}

// retention reads the run-retention flags of serve.
type retention struct {
	days int
	keep int
}

func (r *retention) register(fs *flag.FlagSet) {
	fs.IntVar(&r.days, "retain-days", 0, "delete finished runs (and their events) older than this many days, at start-up and daily; 0 keeps them")
	fs.IntVar(&r.keep, "retain-runs", 0, "keep at most this many finished runs per chain; 0 keeps them all")
}

func (r *retention) policy() (store.Retention, bool) {
	p := store.Retention{OlderThan: time.Duration(r.days) * 24 * time.Hour, KeepPerChain: r.keep}
	return p, r.days > 0 || r.keep > 0
}
