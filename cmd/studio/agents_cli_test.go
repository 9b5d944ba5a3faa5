package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainstudio/studio/store/sqlite"
)

func agentsCLI(t *testing.T, db string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cmdAgents(context.Background(), append(args, "--db", db), &out, &out)
	return code, out.String()
}

// `studio agents import` stores agent files as reusable agents: every
// file of a folder, a changed file as a new version, an unchanged one not at
// all, and nothing when one file does not read.
func TestAgentsImportCommand(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "s.db")
	code, out := agentsCLI(t, db, "import", filepath.Join("..", "..", "examples", "agents"))
	if code != exitOK || strings.Count(out, "stored as version 1") != 5 {
		t.Fatalf("import: %d\n%s", code, out)
	}
	dir := t.TempDir()
	notes := filepath.Join(dir, "crm-logger.agent.yaml")
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "agents", "crm-logger.agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte(strings.Replace(string(src), "Logs the lead", "Logs every lead", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out = agentsCLI(t, db, "import", notes, filepath.Join("..", "..", "examples", "agents", "email-composer.agent.yaml"))
	if code != exitOK || !strings.Contains(out, "crm-logger: stored as version 2") || !strings.Contains(out, "email-composer: unchanged (version 1)") {
		t.Fatalf("re-import: %d\n%s", code, out)
	}
	bad := filepath.Join(dir, "bad.agent.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\ntool: echo\nmystery: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out = agentsCLI(t, db, "import", notes, bad)
	if code != exitUsage || !strings.Contains(out, "nothing imported") || !strings.Contains(out, "mystery") {
		t.Fatalf("a bad file: %d\n%s", code, out)
	}
	code, out = agentsCLI(t, db, "list")
	if code != exitOK || !strings.Contains(out, "crm-logger") || !strings.Contains(out, "  2  ") || strings.Contains(out, "bad") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	if code, out = agentsCLI(t, db, "remove", "crm-logger"); code != exitOK {
		t.Fatalf("remove: %d\n%s", code, out)
	}
	if code, out = agentsCLI(t, db, "remove", "crm-logger"); code != exitFailed || !strings.Contains(out, `no agent named "crm-logger"`) {
		t.Fatalf("a second remove: %d\n%s", code, out)
	}
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if list, err := st.ListAgents(context.Background()); err != nil || len(list) != 4 {
		t.Fatalf("stored: %d, %v", len(list), err)
	}
	if code, _ = agentsCLI(t, db, "fly"); code != exitUsage {
		t.Fatalf("an unknown action: %d", code)
	}
}
