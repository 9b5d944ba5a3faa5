package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Hostile input through the CLI: every case exits non-zero with a message
// naming the problem, and nothing panics.
func TestHostileCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.json", `{"name":"ok","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`)
	var many strings.Builder
	many.WriteString(`{"name":"many","nodes":[`)
	for i := 0; i < 10_001; i++ {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"node_id":"n` + itoa(i) + `","kind":"tool","name":"echo"}`)
	}
	many.WriteString(`]}`)

	cases := []struct {
		name string
		args []string
		code int
		msg  []string // substrings of stdout+stderr
	}{
		{"malformed file", []string{"validate", write("bad.json", `{"name":"x","nodes":[`)}, exitFailed, []string{"bad.json"}},
		{"missing file", []string{"validate", filepath.Join(dir, "nope.json")}, exitFailed, []string{"nope.json"}},
		{"a folder instead of a file", []string{"validate", dir}, exitFailed, []string{dir}},
		{"invalid UTF-8", []string{"validate", write("utf.json", "{\"name\":\"\xff\",\"nodes\":[]}")}, exitFailed, []string{"UTF-8"}},
		{"unknown kind", []string{"validate", write("kind.json", `{"name":"x","nodes":[{"node_id":"a","kind":"warp"}]}`)}, exitFailed, []string{"warp"}},
		{"over the node limit", []string{"validate", write("many.json", many.String())}, exitFailed, []string{"10001 nodes", "limit"}},
		{"nested 10,000 levels", []string{"validate", write("deep.json", `{"name":"d","nodes":[{"node_id":"a","kind":"tool","name":"echo","input":`+strings.Repeat("[", 10_000)+strings.Repeat("]", 10_000)+`}]}`)}, exitFailed, []string{"depth"}},
		{"chain cycle", []string{"validate", write("cycle.json", `{"name":"c","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"b"},{"source":"b","target":"a"}]}`)}, exitFailed, []string{"chain_cycle"}},
		{"run input not JSON", []string{"run", "--input", `{"x":`, ok}, exitUsage, []string{"--input"}},
		{"run input not an object", []string{"run", "--input", `[1]`, ok}, exitUsage, []string{"--input"}},
		{"run input empty", []string{"run", ok, "--input="}, exitUsage, []string{"--input"}},
		{"answer not JSON", []string{"run", "--answer", `{nope`, write("ask.json", `{"name":"ask","nodes":[{"node_id":"q","kind":"interrupt"}]}`)}, exitUsage, []string{"--answer"}},
		{"read_file without a workspace", []string{"run", write("rf.json", `{"name":"rf","nodes":[{"node_id":"r","kind":"tool","name":"read_file","input":{"path":"/etc/passwd"}}]}`)}, exitFailed, []string{"file access is disabled"}},
		{"read_file escaping the workspace", []string{"run", "--workspace", dir, write("rf2.json", `{"name":"rf2","nodes":[{"node_id":"r","kind":"tool","name":"read_file","input":{"path":"../../etc/passwd"}}]}`)}, exitFailed, []string{"escapes the workspace"}},
		{"proc not allowed", []string{"run", write("proc.json", `{"name":"p","nodes":[{"node_id":"p","kind":"proc","config":{"argv":["sh","-c","echo pwned"]}}]}`)}, exitFailed, []string{"allow"}},
		{"http to metadata", []string{"run", write("meta.json", `{"name":"m","nodes":[{"node_id":"h","kind":"tool","name":"http","input":{"url":"http://169.254.169.254/"}}]}`)}, exitFailed, []string{"169.254.169.254", "link-local"}},
		{"unknown flag", []string{"run", "--evil", ok}, exitUsage, []string{"evil"}},
		{"unknown command", []string{"pwn"}, exitUsage, []string{"pwn"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errb strings.Builder
			code := dispatch(ctx, tc.args, &out, &errb)
			all := out.String() + errb.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %.2000s", code, tc.code, all)
			}
			for _, w := range tc.msg {
				if !strings.Contains(all, w) {
					t.Errorf("output does not name %q: %.2000s", w, all)
				}
			}
			if strings.Contains(all, "goroutine ") || strings.Contains(all, "panic") {
				t.Errorf("panic: %s", all)
			}
		})
	}
}

// A2E host on stdin: a hostile line gets a chain/resp with chain_decode and
// the host goes on with the next line.
func TestHostileA2ELines(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"type":"chain/req","id":"1","chain_id":"x","nodes":[`,
		"\xff\xfe",
		`[]`,
		`{"type":"chain/req","id":"2","chain_id":"x","nodes":[{"node_id":"a","kind":"teleport"}]}`,
		`{"type":"chain/req","id":"3","chain_id":"ok","streaming":false,"nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`,
	}, "\n") + "\n"
	var out, errb strings.Builder
	code := runA2E(context.Background(), nil, strings.NewReader(in), &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	if n := strings.Count(s, `"code":"chain_decode"`); n != 4 {
		t.Errorf("%d chain_decode answers, want 4:\n%s", n, s)
	}
	if !strings.Contains(s, `"success":true`) {
		t.Errorf("the valid request after the hostile ones did not succeed:\n%s", s)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{digits[i%10]}, b...)
	}
	return string(b)
}
