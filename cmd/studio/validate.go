package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
)

func cmdValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the issues as a JSON array")
	fs.Usage = func() {
		printUsage(fs, "studio validate FILE [--json]",
			"Checks a chain document (studio format or an A2E chain/req) and prints every issue.\n"+
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
			writeJSON(stdout, []engine.Issue{{Rule: engine.CodeDecode, Severity: engine.SeverityError, Message: err.Error()}})
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
	for n, c := range builtin.Checks() {
		reg.SetCheck(n, c)
	}
	issues := engine.ValidateWith(c, engine.ValidateOptions{Resolve: folderResolver(path), ToolOutput: func(name string) (map[string]any, bool) {
		sc, ok := outputs[name]
		return sc, ok
	}, Schemas: reg.NodeSchemas(nil), Check: reg.NodeCheck})
	if *asJSON {
		if issues == nil {
			issues = []engine.Issue{}
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
	if engine.HasErrors(issues) {
		return exitFailed
	}
	return exitOK
}

// loadChain reads and decodes a chain or A2E request file.
func loadChain(path string) (*engine.Chain, error) {
	data, err := readLimited(path, int64(engine.DefaultLimits.MaxDocumentBytes))
	if err != nil {
		return nil, err
	}
	return engine.Decode(data, engine.Limits{})
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
