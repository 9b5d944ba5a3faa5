package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store/sqlite"
)

// studio runs the CLI in-process and returns its exit code and output.
func studio(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// exampleInputs gives each example the input its README command uses.
var exampleInputs = map[string]struct {
	input  string
	answer string
	status string // "" is completed
}{
	"linear.json":   {input: `{"name":"Ada","languages":["en","fr"]}`},
	"branch.json":   {input: `{"items":[1,2]}`},
	"map.json":      {input: `{"files":["a.txt","b.txt"]}`},
	"parallel.json": {input: `{}`, status: "partial"}, // any_success filters out its broken source: a handled failure
	"loop.json":     {input: `{}`},
	"approval.json": {input: `{"amount":10,"customer":"bob"}`, answer: `{"approved":true}`},
}

func TestEveryExampleValidatesAndRuns(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../examples/*.json")
	if len(files) < 6 {
		t.Fatalf("want at least 6 examples, found %d", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			if code, out, errs := studio(t, "validate", f); code != exitOK {
				t.Fatalf("validate exit %d: %s %s", code, out, errs)
			}
			in, ok := exampleInputs[name]
			if !ok {
				t.Fatalf("no input for example %s: add it to exampleInputs and the README", name)
			}
			args := []string{"run", "--json", "--input", in.input}
			if in.answer != "" {
				args = append(args, "--answer", in.answer)
			}
			code, out, errs := studio(t, append(args, f)...)
			if code != exitOK {
				t.Fatalf("run exit %d: %s %s", code, out, errs)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var res struct {
				Type        string `json:"type"`
				Status      string `json:"status"`
				FinalOutput any    `json:"final_output"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("last line is not the result: %v", err)
			}
			want := in.status
			if want == "" {
				want = "completed"
			}
			if res.Type != "result" || res.Status != want || res.FinalOutput == nil {
				t.Fatalf("result = %+v", res)
			}
		})
	}
}

func TestRunPrintsEventsThenResult(t *testing.T) {
	t.Parallel()
	code, out, _ := studio(t, "run", "--json", "--input", `{"items":[]}`, "../../examples/branch.json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var phases []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Type   string `json:"type"`
			NodeID string `json:"node_id"`
			Phase  string `json:"phase"`
		}
		_ = json.Unmarshal([]byte(line), &ev)
		if ev.Type == "event" {
			phases = append(phases, ev.NodeID+":"+ev.Phase)
		}
	}
	got := strings.Join(phases, " ")
	want := "fetch:start fetch:done check:start check:done process:skip skip_log:start skip_log:done report:start report:done"
	if got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
}

func TestApprovalWithoutAnswerPauses(t *testing.T) {
	t.Parallel()
	code, out, _ := studio(t, "run", "--input", `{"amount":1,"customer":"x"}`, "../../examples/approval.json")
	if code != exitPaused || !strings.Contains(out, "waiting at approve") {
		t.Fatalf("exit %d, out %s", code, out)
	}
}

func TestValidateReportsIssuesAndExitsOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	doc := `{"name":"bad","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"lonely","kind":"tool","name":"echo"}]}`
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := studio(t, "validate", "--json", bad)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d", code, exitFailed)
	}
	var issues []struct{ Rule, NodeID string }
	if err := json.Unmarshal([]byte(out), &issues); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	found := false
	for _, is := range issues {
		found = found || is.Rule == "unreachable"
	}
	if !found {
		t.Errorf("want an unreachable issue, got %s", out)
	}
	if code, _, errs := studio(t, "validate", filepath.Join(dir, "missing.json")); code != exitFailed || !strings.Contains(errs, "missing.json") {
		t.Errorf("missing file: exit %d, %s", code, errs)
	}
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	t.Parallel()
	if code, _, errs := studio(t, "frobnicate"); code != exitUsage || !strings.Contains(errs, "unknown command") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if code, out, _ := studio(t, "help"); code != exitOK || !strings.Contains(out, "validate") || !strings.Contains(out, "serve") {
		t.Errorf("help: exit %d: %s", code, out)
	}
}

func TestBackupWritesAUsableCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "s.db"), filepath.Join(dir, "copy.db")
	db, err := sqlite.Open(context.Background(), src, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateChain(context.Background(), &chain.Chain{Name: "kept", Nodes: []chain.Node{{ID: "a", Kind: chain.KindTool, Name: "echo"}}}, "", true); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if code, out, errs := studio(t, "backup", "--db", src, dst); code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	if code, _, errs := studio(t, "backup", "--db", src, dst); code != exitFailed || !strings.Contains(errs, "exists") {
		t.Errorf("second backup onto the same file: exit %d, %s", code, errs)
	}
	cp, err := sqlite.Open(context.Background(), dst, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if _, err := cp.GetChainByName(context.Background(), "kept"); err != nil {
		t.Errorf("the copy lacks the chain: %v", err)
	}
}

// TestValidateChecksToolInputs: `studio validate` checks a node's static
// input against the built-in tool's schema and names the field.
func TestValidateChecksToolInputs(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "wait.json")
	doc := `{"name":"wait","nodes":[{"node_id":"pause","kind":"tool","name":"delay","input":{"ms":"fast"}}]}`
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := studio(t, "validate", f)
	if code != exitFailed || !strings.Contains(out, `input.ms: want a number, got "fast" [input_schema]`) {
		t.Errorf("exit %d, want %d and the input_schema issue:\n%s", code, exitFailed, out)
	}
}
