// Command studio designs, validates, runs and watches chains.
//
//	studio [serve]              start the studio on http://127.0.0.1:8080
//	studio help                 list the commands
//	studio validate FILE        check a chain document
//	studio test FILE|DIR        run the tests kept in chain documents
//	studio run FILE             run a chain headless
//	studio users add NAME --role admin   add a user; prints its token once
package main

import (
	"context"
	"fmt"
	"github.com/chainstudio/studio/engine/sandbox"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	_ "time/tzdata" // schedules name IANA zones: work on hosts without a zone database
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"serve", "start the studio (the default): designer, JSON API, A2E host", cmdServe},
		{"worker", "execute runs from a PostgreSQL database's queue, without HTTP (beside any number of serve)", cmdWorker},
		{"validate", "check a chain file (studio or A2E chain/req JSON); exit 1 on any error", cmdValidate},
		{"run", "run a chain file headless, printing events as they happen and the result", cmdRun},
		{"test", "run the tests kept in chain files (a FILE or every *.json of a DIR); exit 1 on any failure", cmdTest},
		{"a2e", "the A2E chain host on stdin/stdout: chain/req lines in, chain/event and chain/resp NDJSON out", cmdA2E},
		{"mcp", "the studio's MCP server on stdin/stdout: a bridge to a running studio's /v1/mcp (--url, --token)", cmdMCP},
		{"users", "add, list, set-role or remove the people who sign in, each with a role and their own token", cmdUsers},
		{"credentials", "add, list, set, remove the credentials chains use by name, or rotate their key", func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			return cmdCredentials(ctx, args, os.Stdin, stdout, stderr)
		}},
		{"mcp-servers", "add, list or remove the MCP servers whose tools chains call as mcp:<server>/<tool>", cmdMCPServers},
		{"agents", "import agent files into the store as reusable agents, list or remove them", cmdAgents},
		{"backup", "write a consistent copy of the database (safe while the studio runs)", cmdBackup},
		{"help", "show this list, or `studio help COMMAND` for a command's flags", nil},
	}
}

// Exit codes shared by the subcommands.
const (
	exitOK      = 0
	exitFailed  = 1 // invalid chain, failed run
	exitUsage   = 2
	exitPaused  = 3 // the run is waiting at an interrupt
	exitStopped = 4 // cancelled or timed out
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.ChildArg {
		// A code node's sandbox process (the pool starts it): it never
		// returns, and nothing of the studio runs in it.
		sandbox.Child(os.Args[2:])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		return cmdServe(ctx, args, stdout, stderr) // `studio` alone, or `studio --addr …`, serves
	}
	name, rest := args[0], args[1:]
	if name == "help" || name == "-h" || name == "--help" {
		if len(rest) > 0 {
			for _, c := range commands() {
				if c.name == rest[0] && c.run != nil {
					return c.run(ctx, []string{"-h"}, stdout, stdout)
				}
			}
		}
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name && c.run != nil {
			return c.run(ctx, rest, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "studio: unknown command %q\n\n", name)
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Chain Studio: design, validate, run and watch chains.")
	fmt.Fprintln(w, "\nUsage: studio COMMAND [FILE] [flags]   (flags before or after FILE)\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nExit codes: 0 ok, 1 invalid chain or failed run, 2 usage, 3 paused at an interrupt, 4 cancelled or timed out.\n(`go run` reports every failure as 1: build the binary when the code matters.)")
}
