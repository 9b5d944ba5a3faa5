package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chainstudio/studio/engine/mcp"
	"github.com/chainstudio/studio/store"
)

const mcpServersHelp = `studio mcp-servers add NAME --transport http|sse --url URL [--header K=V …] [--credential NAME]
studio mcp-servers add NAME --transport stdio --command CMD [--arg A …] [--env K=V …]
studio mcp-servers list                      names, transports, addresses or commands
studio mcp-servers remove NAME`

// cmdMCPServers registers the MCP servers whose tools chains call as
// mcp:<server>/<tool>, like the page and the API. A running studio picks a
// change up within its poll (10 seconds).
func cmdMCPServers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-servers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", envOr("STUDIO_DB", "studio.db"), "the database: a SQLite `FILE`, or a postgres:// URL (env STUDIO_DB)")
	transport := fs.String("transport", "", "how the studio reaches the server: `http`, sse or stdio")
	url := fs.String("url", "", "the server's `URL` (http, sse)")
	credential := fs.String("credential", "", "the studio credential `NAME` that authenticates (http, sse; open to every chain)")
	command := fs.String("command", "", "the program `CMD` to run (stdio; the studio needs --allow-mcp-command for it)")
	var headers, argv, env listFlag
	fs.Var(&headers, "header", "a header that is not secret, `K=V` (repeatable; http, sse)")
	fs.Var(&argv, "arg", "an argument `A` of the command (repeatable; stdio)")
	fs.Var(&env, "env", "a variable `K=V` for the program, not a secret (repeatable; stdio)")
	disabled := fs.Bool("disabled", false, "register it switched off")
	fs.Usage = func() {
		printUsage(fs, "studio mcp-servers add|list|remove [NAME] [flags]",
			"Registers the MCP servers whose tools chains call as mcp:<server>/<tool>:\n\n"+mcpServersHelp+"\n\n"+
				"Secrets come from a credential (--credential), never from headers or env.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "studio mcp-servers: missing the action: add, list or remove\n\n")
		fs.Usage()
		return exitUsage
	}
	verb, args := args[0], args[1:]
	want := map[string][]string{"add": {"NAME"}, "list": nil, "remove": {"NAME"}}
	names, known := want[verb]
	if !known {
		fmt.Fprintf(stderr, "studio mcp-servers: unknown action %q: want add, list or remove\n\n", verb)
		fs.Usage()
		return exitUsage
	}
	if !wantArgs(fs, args, names...) {
		return exitUsage
	}
	db, err := openAdminStore(ctx, *dbPath)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer db.Close()
	switch verb {
	case "add":
		now := time.Now().UTC()
		rec := store.MCPServer{Name: args[0], Transport: *transport, URL: *url, Credential: *credential, Command: *command, Args: argv,
			Enabled: !*disabled, CreatedBy: "cli", Created: now, UpdatedBy: "cli", Updated: now}
		if rec.Headers, err = pairs("--header", headers); err == nil {
			rec.Env, err = pairs("--env", env)
		}
		if err == nil {
			err = addMCPServer(ctx, db, &rec, stdout)
		}
	case "list":
		err = listMCPServers(ctx, db, stdout)
	case "remove":
		if err = db.RemoveMCPServer(ctx, args[0]); err == nil {
			fmt.Fprintf(stdout, "removed %s: chains that call its tools fail validation from now on\n", args[0])
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "studio mcp-servers %s: %s\n", verb, store.ErrorMessage(err))
		if store.ErrorCode(err) == store.EINVALID {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// pairs reads K=V flags into a map (nil when there are none).
func pairs(flagName string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, store.Errorf(store.EINVALID, "%s %q: want K=V", flagName, kv)
		}
		out[k] = v
	}
	return out, nil
}

// addMCPServer checks what can be checked without the studio's flags (the
// record's shape, the credential, that the command exists) and stores it.
func addMCPServer(ctx context.Context, db store.Backend, rec *store.MCPServer, stdout io.Writer) error {
	if err := store.CheckMCPServer(rec); err != nil {
		return err
	}
	if rec.Credential != "" {
		cr, err := db.GetCredential(ctx, rec.Credential)
		if store.ErrorCode(err) == store.ENOTFOUND {
			return store.Errorf(store.EINVALID, "mcp server %q: credential: %q does not exist (add it with studio credentials add first)", rec.Name, rec.Credential)
		}
		if err != nil {
			return err
		}
		if len(cr.Chains) > 0 {
			return store.Errorf(store.EINVALID, "mcp server %q: credential: %q is limited to some chains, but every chain may call a server's tools", rec.Name, rec.Credential)
		}
	}
	var prog string
	if rec.Transport == store.MCPTransportStdio {
		p, err := mcp.ResolveCommand(rec.Command)
		if err != nil {
			return store.Errorf(store.EINVALID, "mcp server %q: command %q: %v", rec.Name, rec.Command, err)
		}
		prog = p
	}
	if err := db.AddMCPServer(ctx, rec); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "added %s (%s)\n", rec.Name, rec.Transport)
	if prog != "" {
		fmt.Fprintf(stdout, "the studio runs it only when started with %s %s\n", mcp.AllowCommandFlag, prog)
	}
	return nil
}

func listMCPServers(ctx context.Context, db store.Backend, stdout io.Writer) error {
	list, err := db.ListMCPServers(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no MCP servers: add one with `studio mcp-servers add NAME --transport http --url URL`")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tADDRESS OR COMMAND\tCREDENTIAL\tENABLED")
	for _, s := range list {
		target := s.URL
		if s.Transport == store.MCPTransportStdio {
			target = strings.Join(append([]string{s.Command}, s.Args...), " ")
		}
		cred := s.Credential
		if cred == "" {
			cred = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\n", s.Name, s.Transport, target, cred, s.Enabled)
	}
	return tw.Flush()
}
