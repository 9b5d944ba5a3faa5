package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/mcp"
)

func cmdValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the issues as a JSON array")
	toolsList := fs.String("tools", "", "comma-separated names of tools the target studio has beyond the built-in ones (MCP tools such as mcp:github/search_issues); these are not flagged")
	fs.Usage = func() {
		printUsage(fs, "studio validate FILE [--json] [--tools NAME,...]",
			"Checks a chain document (studio format or an A2E chain/req) and prints every issue.\n"+
				"A tool that is not built in is an error (unknown_tool), as `studio run` refuses it; an MCP tool\n"+
				"(mcp:SERVER/TOOL), which only a studio with that server can know, is a warning unless --tools names it.\n"+
				"Exit status 1 when there is any error (warnings alone pass), 2 on a usage error.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, args, "FILE") {
		return exitUsage
	}
	path := args[0]
	c, err := loadChain(path)
	if err != nil {
		if *asJSON {
			writeJSON(stdout, []chain.Issue{{Rule: chain.CodeDecode, Severity: chain.SeverityError, Message: err.Error()}})
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", path, err)
		}
		return exitFailed
	}
	outputs := builtin.OutputSchemas() // the tests' mocks of built-in tools are checked against these
	reg := engine.NewRegistry()        // schemas only: nothing runs here
	for _, t := range builtin.Catalog() {
		reg.SetInputSchema(t.Name, t.InputSchema)
	}
	for n, c := range builtin.Checks(builtin.Options{}) {
		reg.SetCheck(n, c)
	}
	known, unchecked := headlessTools(reg, *toolsList)
	issues := chain.ValidateWith(c, chain.ValidateOptions{Resolve: folderResolver(path), ToolOutput: func(name string) (map[string]any, bool) {
		sc, ok := outputs[name]
		return sc, ok
	}, Schemas: reg.NodeSchemas(nil), Check: reg.NodeCheck, Tools: known, ToolUnavailable: unchecked})
	if *asJSON {
		if issues == nil {
			issues = []chain.Issue{}
		}
		writeJSON(stdout, issues)
	} else {
		for _, is := range issues {
			fmt.Fprintf(stdout, "%s: %s: %s\n", path, is.Severity, is.String())
		}
		if len(issues) == 0 {
			fmt.Fprintf(stdout, "%s: ok (%d nodes, %d edges)\n", path, len(c.Nodes), len(c.Edges))
		}
	}
	if chain.HasErrors(issues) {
		return exitFailed
	}
	return exitOK
}

// headlessTools is what a validate without a studio knows of tools: the
// built-in ones and those --tools lists are known; an MCP tool id is known
// but unchecked (a warning: only a studio with that server can tell), and
// any other name is unknown (an error, as `studio run` refuses it).
func headlessTools(reg *engine.Registry, list string) (known func(string) bool, unchecked func(string) string) {
	listed := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			listed[n] = true
		}
	}
	isMCP := func(name string) bool { _, _, ok := mcp.ParseToolID(name); return ok }
	known = func(name string) bool {
		if listed[name] || isMCP(name) {
			return true
		}
		_, ok := reg.InputSchema(name)
		return ok
	}
	unchecked = func(name string) string {
		if isMCP(name) && !listed[name] {
			return "an MCP tool, which a headless validate cannot reach; --tools " + name + " says the studio has it"
		}
		return ""
	}
	return known, unchecked
}

// loadChain reads and decodes a chain or A2E request file.
func loadChain(path string) (*chain.Chain, error) {
	data, err := readLimited(path, int64(chain.DefaultLimits.MaxDocumentBytes))
	if err != nil {
		return nil, err
	}
	return chain.Decode(data, chain.Limits{})
}

func readLimited(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over the %d-byte document limit", path, max)
	}
	return data, nil
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
