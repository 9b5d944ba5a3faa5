package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/store"
)

const agentsHelp = `studio agents import FILE|DIR …   store agent files (*.agent.yaml) as reusable agents
studio agents list                 the stored agents, their versions and who changed them last
studio agents remove NAME          delete a stored agent and its versions`

// cmdAgents keeps the reusable agents in the store, as the Agents page and
// /v1/agents do. A running studio picks a change up within its poll (10
// seconds). Import stores each file as a new agent, or as a new version of
// the stored agent of its name.
func cmdAgents(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agents", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", envOr("STUDIO_DB", "studio.db"), "the database: a SQLite `FILE`, or a postgres:// URL (env STUDIO_DB)")
	message := fs.String("message", "imported", "why: recorded with each version imported")
	fs.Usage = func() {
		printUsage(fs, "studio agents import|list|remove [ARGS] [flags]",
			"Keeps the reusable agents chains name, in the store:\n\n"+agentsHelp+"\n\n"+
				"A stored agent replaces a file agent (--agents) of its name in the studio.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "studio agents: missing the action: import, list or remove\n\n")
		fs.Usage()
		return exitUsage
	}
	verb, args := args[0], args[1:]
	switch {
	case verb == "import" && len(args) == 0:
		fmt.Fprintf(stderr, "studio agents import: name the agent files or folders to import\n")
		return exitUsage
	case verb == "list" && len(args) != 0, verb == "remove" && len(args) != 1:
		fs.Usage()
		return exitUsage
	case verb != "import" && verb != "list" && verb != "remove":
		fmt.Fprintf(stderr, "studio agents: unknown action %q: want import, list or remove\n\n", verb)
		fs.Usage()
		return exitUsage
	}
	var files []string
	if verb == "import" {
		var err error
		if files, err = agentFiles(args); err != nil {
			fmt.Fprintf(stderr, "studio agents import: %v\n", err)
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
	case "import":
		err = importAgents(ctx, db, files, *message, stdout)
	case "list":
		err = listAgents(ctx, db, stdout)
	case "remove":
		if err = db.DeleteAgent(ctx, args[0]); err == nil {
			fmt.Fprintf(stdout, "removed %s: chains that name it fail validation from now on\n", args[0])
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "studio agents %s: %s\n", verb, store.ErrorMessage(err))
		if store.ErrorCode(err) == store.EINVALID {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// agentFiles are the files args name: each file, and each folder's
// *.agent.yaml files.
func agentFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(a, "*"+agent.FileSuffix))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s holds no %s files", a, agent.FileSuffix)
		}
		sort.Strings(matches)
		out = append(out, matches...)
	}
	return out, nil
}

// importAgents reads every file first (each must parse: nothing is stored
// when one does not), then stores each as a new agent or a new version.
func importAgents(ctx context.Context, db store.AgentStore, files []string, message string, stdout io.Writer) error {
	type parsed struct {
		name, source, description string
	}
	var all []parsed
	var errs []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && len(data) > store.MaxAgentSource {
			err = fmt.Errorf("%s: over the limit of %d bytes", f, store.MaxAgentSource)
		}
		var d *agent.Definition
		if err == nil {
			d, err = agent.Parse(data, f)
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		all = append(all, parsed{d.Name, string(data), d.Description})
	}
	if len(errs) > 0 {
		return store.Errorf(store.EINVALID, "nothing imported:\n%s", strings.Join(errs, "\n"))
	}
	for _, p := range all {
		base := 0
		if cur, err := db.GetAgent(ctx, p.name); err == nil {
			base = cur.Version
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		a, err := db.SaveAgent(ctx, &store.Agent{Name: p.name, Source: p.source, Description: p.description, Message: message, UpdatedBy: "cli"}, base)
		if err != nil {
			return err
		}
		switch {
		case a.Version == base:
			fmt.Fprintf(stdout, "%s: unchanged (version %d)\n", a.Name, a.Version)
		default:
			fmt.Fprintf(stdout, "%s: stored as version %d\n", a.Name, a.Version)
		}
	}
	return nil
}

func listAgents(ctx context.Context, db store.AgentStore, stdout io.Writer) error {
	list, err := db.ListAgents(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no stored agents: store one with `studio agents import FILE` or on the Agents page")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tUPDATED\tBY\tDESCRIPTION")
	for _, a := range list {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", a.Name, a.Version, a.Updated.Format("2006-01-02 15:04"), a.UpdatedBy, a.Description)
	}
	return tw.Flush()
}
