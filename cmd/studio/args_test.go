package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/store/sqlite"
)

func TestParseArgsInterleaved(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		args  []string
		pos   []string
		input string
		json  bool
		ans   []string
		code  int // when parsing ends the command
		msg   string
	}{
		{name: "flags after the file", args: []string{"f.json", "--input", `{"a":1}`, "--json"}, pos: []string{"f.json"}, input: `{"a":1}`, json: true},
		{name: "flags before the file", args: []string{"--json", "f.json"}, pos: []string{"f.json"}, json: true},
		{name: "flags on both sides", args: []string{"--json", "f.json", "--answer", "1", "--answer=2"}, pos: []string{"f.json"}, json: true, ans: []string{"1", "2"}},
		{name: "single dash and =", args: []string{"-input={}", "f.json", "-json"}, pos: []string{"f.json"}, input: "{}", json: true},
		{name: "a value that looks like a flag", args: []string{"f.json", "--answer", "-1"}, pos: []string{"f.json"}, ans: []string{"-1"}},
		{name: "-- ends the flags", args: []string{"--json", "--", "--input", "f.json"}, pos: []string{"--input", "f.json"}, json: true},
		{name: "- alone is an argument", args: []string{"-", "--json"}, pos: []string{"-"}, json: true},
		{name: "bool flag with =false", args: []string{"f.json", "--json=false"}, pos: []string{"f.json"}},
		{name: "-h after the file", args: []string{"f.json", "-h"}, code: exitOK, msg: "Usage: studio t FILE"},
		{name: "--help before the file", args: []string{"--help", "f.json"}, code: exitOK, msg: "Usage: studio t FILE"},
		{name: "a value flag at the end", args: []string{"f.json", "--input"}, code: exitUsage, msg: "flag needs an argument: --input"},
		{name: "unknown flag after the file", args: []string{"f.json", "--evil"}, code: exitUsage, msg: "-evil"},
		{name: "bad bool value", args: []string{"f.json", "--json=maybe"}, code: exitUsage, msg: "maybe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			var out strings.Builder
			fs.SetOutput(&out)
			input := fs.String("input", "", "`JSON`")
			asJSON := fs.Bool("json", false, "")
			var ans listFlag
			fs.Var(&ans, "answer", "`JSON`")
			fs.Usage = func() { printUsage(fs, "studio t FILE [flags]", "A test command.") }
			pos, code, ok := parseArgs(fs, tc.args)
			if tc.msg != "" {
				if ok || code != tc.code {
					t.Fatalf("ok=%v code=%d, want the command to end with %d", ok, code, tc.code)
				}
				if !strings.Contains(out.String(), tc.msg) {
					t.Fatalf("output lacks %q:\n%s", tc.msg, out.String())
				}
				return
			}
			if !ok {
				t.Fatalf("parse failed (%d): %s", code, out.String())
			}
			if !slices.Equal(pos, tc.pos) || *input != tc.input || *asJSON != tc.json || !slices.Equal(ans, tc.ans) {
				t.Errorf("pos=%q input=%q json=%v answers=%q", pos, *input, *asJSON, ans)
			}
		})
	}
}

// Every subcommand takes its flags before or after its arguments.
func TestEveryCommandTakesFlagsAnywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "s.db")
	db, err := sqlite.Open(context.Background(), src, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	cases := []struct {
		name string
		args []string
		code int
		out  string // substring of stdout
	}{
		{"run, input after the file", []string{"run", "../../examples/branch.json", "--input", `{"items":[1,2]}`}, exitOK, `{"count":2}`},
		{"run, input and json after the file", []string{"run", "../../examples/branch.json", "--input", `{"items":[]}`, "--json"}, exitOK, `"matched":"false"`},
		{"run, json before the file", []string{"run", "--json", "../../examples/branch.json"}, exitOK, `"type":"result"`},
		{"run, answer after the file", []string{"run", "../../examples/approval.json", "--answer", `{"approved":true}`}, exitOK, "resuming approve"},
		{"validate, json after the file", []string{"validate", "../../examples/branch.json", "--json"}, exitOK, "[]"},
		{"backup, db after the target", []string{"backup", filepath.Join(dir, "copy.db"), "--db", src}, exitOK, "backed up"},
		{"run -h after the file", []string{"run", "../../examples/branch.json", "-h"}, exitOK, ""},
		{"run, a value flag at the end", []string{"run", "../../examples/branch.json", "--input"}, exitUsage, ""},
		{"run, two files", []string{"run", "../../examples/branch.json", "../../examples/map.json"}, exitUsage, ""},
		{"a2e, an argument", []string{"a2e", "x.json"}, exitUsage, ""},
		// Safe on a studio that would ignore the argument and serve.
		{"serve, an argument", []string{"serve", "x", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "serve.db"), "--no-examples"}, exitUsage, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var outb, errb strings.Builder
			code := dispatch(ctx, tc.args, &outb, &errb)
			out, errs := outb.String(), errb.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s\n%s", code, tc.code, out, errs)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, out)
			}
			if code == exitUsage && !strings.Contains(errs, "Usage: studio") {
				t.Errorf("a usage error without the usage:\n%s", errs)
			}
		})
	}
}

func TestHelpShowsTheOrderPeopleType(t *testing.T) {
	t.Parallel()
	for cmd, synopsis := range map[string]string{
		"run":      "Usage: studio run FILE [--input JSON]",
		"validate": "Usage: studio validate FILE [--json]",
		"backup":   "Usage: studio backup TARGET [--db FILE]",
		"serve":    "Usage: studio [serve] [flags]",
		"a2e":      "Usage: studio a2e [flags] < requests.ndjson",
	} {
		code, out, _ := studio(t, "help", cmd)
		if code != exitOK || !strings.Contains(out, synopsis) || !strings.Contains(out, "before or after") {
			t.Errorf("help %s: exit %d:\n%s", cmd, code, out)
		}
	}
	if _, out, _ := studio(t, "help", "run"); !strings.Contains(out, "sample_input") || !strings.Contains(out, "--input JSON") {
		t.Errorf("help run does not explain the input:\n%s", out)
	}
}

// Without --input a run starts from the chain's sample_input; --input wins.
func TestRunUsesSampleInput(t *testing.T) {
	t.Parallel()
	code, out, errs := studio(t, "run", "../../examples/linear.json", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	if !strings.Contains(out, `"greeting":"Hello Ada, you speak 2 languages."`) {
		t.Errorf("not run with the sample input:\n%s", out)
	}
	code, out, _ = studio(t, "run", "../../examples/linear.json")
	if code != exitOK || !strings.Contains(out, "input (the chain's sample_input; --input replaces it)") {
		t.Errorf("the text output does not say where the input came from (exit %d):\n%s", code, out)
	}
	code, out, _ = studio(t, "run", "../../examples/linear.json", "--input", `{"name":"Bo","languages":["de"]}`, "--json")
	if code != exitOK || !strings.Contains(out, "Hello Bo, you speak 1 languages.") {
		t.Errorf("--input did not win (exit %d):\n%s", code, out)
	}
	// Without --input an A2E request runs with its initial_input, as before.
	dir := t.TempDir()
	req := filepath.Join(dir, "req.json")
	doc := `{"type":"chain/req","id":"r1","chain_id":"x","initial_input":{"v":"from the request"},"nodes":[{"node_id":"a","kind":"tool","name":"echo","input_map":{"v":"input.v"}}]}`
	if err := os.WriteFile(req, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = studio(t, "run", req, "--json")
	if code != exitOK || !strings.Contains(out, `"final_output":{"v":"from the request"}`) {
		t.Errorf("request input: exit %d:\n%s%s", code, out, errs)
	}
}

// The examples whose README command needs an input carry one.
func TestExamplesCarrySampleInput(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"linear.json", "branch.json", "map.json", "approval.json"} {
		c, err := loadChain(filepath.Join("../../examples", name))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{}
		if err := json.Unmarshal([]byte(exampleInputs[name].input), &want); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(c.SampleInput)
		wantJSON, _ := json.Marshal(want)
		if string(got) != string(wantJSON) {
			t.Errorf("%s: sample_input %s, want the README's %s", name, got, wantJSON)
		}
	}
}

// An expression error names the node, the expression, the function and what
// its argument was, in words, not go-jmespath's internals.
func TestRunExpressionErrorInPlainWords(t *testing.T) {
	t.Parallel()
	code, out, errs := studio(t, "run", "../../examples/linear.json", "--input", "{}")
	if code != exitFailed {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	for _, want := range []string{
		`node "shape" failed`,
		`"{name: name, langs: length(languages)}"`,
		`length() needs an array, string or object; languages is missing (null)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "jpType") || strings.Contains(out, "<nil>") {
		t.Errorf("go-jmespath's internals leak:\n%s", out)
	}
}

// --trusted-proxy takes ranges and single addresses; a typo or a range
// that trusts every peer stops the studio at start.
func TestTrustedProxyFlag(t *testing.T) {
	t.Parallel()
	var l prefixListFlag
	for _, v := range []string{"10.0.0.0/8", "192.0.2.7", "fd00::1/8", "::1"} {
		if err := l.Set(v); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	if got := l.String(); got != "10.0.0.0/8,192.0.2.7/32,fd00::/8,::1/128" {
		t.Fatalf("ranges %s", got)
	}
	for _, v := range []string{"proxy.example", "10.0.0.0/33", "0.0.0.0/0", "::/0", ""} {
		if err := l.Set(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
	code, _, errb := studio(t, "serve", "--trusted-proxy", "10.0.0.0/99")
	if code != exitUsage || !strings.Contains(errb, "not a CIDR range") {
		t.Fatalf("serve --trusted-proxy 10.0.0.0/99: exit %d %s", code, errb)
	}
}
