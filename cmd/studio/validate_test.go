package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestValidateUnknownTools: a file `studio run` refuses for an unknown tool
// fails `studio validate` too; an MCP tool, which only a studio with that
// server knows, is a warning unless --tools names it.
func TestValidateUnknownTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, tool string) string {
		p := filepath.Join(dir, name)
		doc := `{"name":"t","nodes":[{"node_id":"a","kind":"tool","name":"` + tool + `"},{"node_id":"b","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"b"}]}`
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unknown := write("unknown.json", "no_such_tool")
	mcpTool := write("mcp.json", "mcp:nowhere/x")
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"an unknown built-in tool", []string{"validate", unknown}, exitFailed, `calls tool "no_such_tool", which this host does not provide [unknown_tool]`},
		{"an unknown tool --tools names", []string{"validate", unknown, "--tools", "no_such_tool"}, exitOK, "ok (2 nodes, 1 edges)"},
		{"an MCP tool", []string{"validate", mcpTool}, exitOK, `warning: node "a" name: tool node "a" calls tool "mcp:nowhere/x"`},
		{"an MCP tool --tools names", []string{"validate", mcpTool, "--tools", "mcp:nowhere/x, other"}, exitOK, "ok (2 nodes, 1 edges)"},
		{"run refuses what validate refuses", []string{"run", unknown}, exitFailed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var outb, errb strings.Builder
			code := dispatch(ctx, tc.args, &outb, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s\n%s", code, tc.code, outb.String(), errb.String())
			}
			if !strings.Contains(outb.String(), tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, outb.String())
			}
		})
	}
}
