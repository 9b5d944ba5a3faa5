package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres"
	"github.com/chainstudio/studio/store/sqlite"
	"github.com/chainstudio/studio/web/httpcore"
)

// usersHelp is the synopsis of `studio users`.
const usersHelp = `studio users add NAME --role ROLE    add a user; prints its token, this once
studio users list                     list the users and their roles
studio users set-role NAME --role ROLE
studio users remove NAME              its token and sessions stop working at once`

// cmdUsers manages the studio's users in its database. It works
// while the studio runs: a SQLite file is opened beside the server (as
// backup does), and the server reads users on each request.
func cmdUsers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("users", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", envOr("STUDIO_DB", "studio.db"), "the database: a SQLite `FILE`, or a postgres:// URL (env STUDIO_DB)")
	role := fs.String("role", "", "the user's `ROLE`: viewer (reads), editor (edits and runs chains), publisher (an editor who may also publish exposed, triggered or credential-limited chains), approver (answers paused runs) or admin (everything, and manages users)")
	fs.Usage = func() {
		printUsage(fs, "studio users add|list|set-role|remove [NAME] [flags]",
			"Manages the people who sign in to the studio, each with their own token:\n\n"+usersHelp+"\n\n"+
				"The studio keeps only a SHA-256 of each token. Without users and --token, a studio on\n"+
				"loopback is open (whoever reaches it is the admin); off loopback it needs an admin.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "studio users: missing the action: add, list, set-role or remove\n\n")
		fs.Usage()
		return exitUsage
	}
	verb, args := args[0], args[1:]
	want := map[string][]string{"add": {"NAME"}, "list": nil, "set-role": {"NAME"}, "remove": {"NAME"}}
	names, known := want[verb]
	if !known {
		fmt.Fprintf(stderr, "studio users: unknown action %q: want add, list, set-role or remove\n\n", verb)
		fs.Usage()
		return exitUsage
	}
	if !wantArgs(fs, args, names...) {
		return exitUsage
	}
	if verb == "add" || verb == "set-role" {
		if *role == "" {
			fmt.Fprintf(stderr, "studio users %s: --role is required: viewer, editor, publisher, approver or admin\n", verb)
			return exitUsage
		}
		if err := store.CheckRole(*role); err != nil {
			fmt.Fprintf(stderr, "studio users %s: %v\n", verb, err)
			return exitUsage
		}
	}
	db, err := openAdminStore(ctx, *dbPath)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer db.Close()
	switch verb {
	case "add":
		err = addUser(ctx, db, args[0], *role, stdout, stderr)
	case "list":
		err = listUsers(ctx, db, stdout)
	case "set-role":
		var u *store.User
		if u, err = db.SetUserRole(ctx, args[0], *role); err == nil {
			fmt.Fprintf(stdout, "%s is now %s\n", u.Name, u.Role)
		}
	case "remove":
		if err = db.RemoveUser(ctx, args[0]); err == nil {
			fmt.Fprintf(stdout, "removed %s: their token no longer works\n", args[0])
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "studio users %s: %s\n", verb, store.ErrorMessage(err))
		if store.ErrorCode(err) == store.EINVALID {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// openAdminStore opens the database the way serve names it, without the
// SQLite owner lock, for the commands that manage it beside a running
// studio (users, credentials): the server reads both on each use.
func openAdminStore(ctx context.Context, dsn string) (store.Backend, error) {
	if postgres.IsDSN(dsn) {
		return postgres.Open(ctx, dsn, postgres.Options{})
	}
	return sqlite.Open(ctx, dsn, sqlite.Options{})
}

// addUser prints the new token alone on stdout (so that scripts can keep
// it: `TOKEN=$(studio users add …)`), and what it is on stderr.
func addUser(ctx context.Context, db store.UserStore, name, role string, stdout, stderr io.Writer) error {
	if err := store.CheckUser(name, role); err != nil {
		return err
	}
	token, hash, err := httpcore.NewUserToken()
	if err != nil {
		return err
	}
	u, err := db.AddUser(ctx, name, role, hash)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, token)
	fmt.Fprintf(stderr, "added %s (%s). The token above is shown only this once: the studio keeps only its SHA-256.\nIt signs in at the studio's sign-in page, or as `Authorization: Bearer TOKEN` for the API.\n", u.Name, u.Role)
	return nil
}

func listUsers(ctx context.Context, db store.UserStore, stdout io.Writer) error {
	us, err := db.ListUsers(ctx)
	if err != nil {
		return err
	}
	if len(us) == 0 {
		fmt.Fprintln(stdout, "no users: add one with `studio users add NAME --role admin`")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tADDED")
	for _, u := range us {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", u.Name, u.Role, u.Created.Format("2006-01-02 15:04 MST"))
	}
	return tw.Flush()
}
