package web

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store/sqlite"
)

// The hostile-input suite (docs/reliability.md "No input crashes
// it"): every case goes through the real HTTP API and is answered with a 4xx
// whose message names the problem, or a validation issue, or a run that
// fails the node with a message naming the cause. After every case the
// server still answers /healthz; after the suite the database passes
// PRAGMA integrity_check through a fresh sqlite.Open on the same file.
//
//	go test ./web -run TestHostile -v

// apiCase is one request and the error it must get.
type apiCase struct {
	name    string
	method  string
	path    string // may contain {chain}: a saved chain's id, {run}: a finished run's id
	body    func() io.Reader
	headers []string
	status  int
	code    string   // error.code; "" when any code will do
	msg     []string // substrings of error.message (case-insensitive)
}

// issueCase is a document POST /v1/validate must answer with an issue.
type issueCase struct {
	name string
	doc  string
	rule string
	msg  []string
}

// runCase is a chain whose run must end with a node failing for a reason
// the node's error names.
type runCase struct {
	name   string
	doc    string
	input  any
	node   string
	msg    []string
	status string // the run's final status; default "failed"
}

func str(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

func bytesBody(b []byte) func() io.Reader {
	return func() io.Reader { return strings.NewReader(string(b)) }
}

// unsized hides the length of a reader, so the request is sent chunked.
type unsized struct{ io.Reader }

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func manyNodes(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"name":"huge","nodes":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"node_id":"n%d","kind":"tool","name":"echo"}`, i)
	}
	b.WriteString(`],"edges":[]}`)
	return []byte(b.String())
}

func toolChain(name, tool string, input map[string]any) string {
	in, _ := json.Marshal(input)
	return fmt.Sprintf(`{"name":%q,"nodes":[{"node_id":"t","kind":"tool","name":%q,"input":%s}]}`, name, tool, in)
}

const xss = `<script>alert(1)</script>`

func hostileServer(t *testing.T) (*Server, *httptest.Server, string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "ok.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "outdir")); err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{Workspace: ws, ProcAllow: []string{"true"}}))
	reg.SetInline(builtin.Inline...)
	srv, ts := newTestServerWith(t, Config{}, reg)
	return srv, ts, outside
}

func TestHostileInput(t *testing.T) {
	t.Parallel()
	srv, ts, outside := hostileServer(t)
	chainID := createChain(t, ts, fmt.Sprintf(linearDoc, "target"))
	r := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", nil)
	wantStatus(t, r, http.StatusAccepted)
	runID := r.json(t)["run_id"].(string)
	waitRun(t, ts, runID)

	big50 := make([]byte, 50<<20)
	for i := range big50 {
		big50[i] = ' '
	}
	copy(big50, `{"name":"big","nodes":[],"description":"`)

	badUTF8 := []byte("{\"name\":\"bad-\xff\xfe-utf8\",\"nodes\":[]}")
	hugeName := fmt.Sprintf(`{"name":%q,"nodes":[]}`, strings.Repeat("n", 1<<20))
	deepInput := `{"name":"deep","nodes":[{"node_id":"a","kind":"tool","name":"echo","input":{"x":` + nested(10_000) + `}}]}`
	longExpr := strings.Repeat("a.", 10_000) + "b" // 20 KiB: over the 16 KiB limit
	longID := strings.Repeat("i", 300)

	api := []apiCase{
		{"malformed JSON", "POST", "/v1/chains", str(`{"name": "x", "nodes": [}`), nil, 400, "chain_decode", []string{"invalid character"}},
		{"truncated JSON", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"a","kind":"to`), nil, 400, "chain_decode", []string{"end"}},
		{"not JSON at all", "POST", "/v1/chains", str(`hello`), nil, 400, "chain_decode", []string{"invalid character"}},
		{"empty body", "POST", "/v1/chains", str(``), nil, 400, "chain_decode", []string{"empty"}},
		{"top level array", "POST", "/v1/chains", str(`[1,2]`), nil, 400, "chain_decode", []string{"array"}},
		{"top level null", "POST", "/v1/chains", str(`null`), nil, 400, "chain_decode", []string{"null"}},
		{"trailing garbage", "POST", "/v1/chains", str(`{"name":"x","nodes":[]} {"again":1}`), nil, 400, "chain_decode", nil},
		{"wrong type: name", "POST", "/v1/chains", str(`{"name":5,"nodes":[]}`), nil, 400, "chain_decode", []string{"name", "wrong type"}},
		{"wrong type: nodes", "POST", "/v1/chains", str(`{"name":"x","nodes":"all"}`), nil, 400, "chain_decode", []string{"nodes", "wrong type"}},
		{"wrong type: node timeout", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo","timeout":"soon"}]}`), nil, 400, "chain_decode", []string{"timeout", "wrong type"}},
		{"wrong type: edge max_iterations", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"a","max_iterations":"3"}]}`), nil, 400, "chain_decode", []string{"max_iterations"}},
		{"unknown top-level field", "POST", "/v1/chains", str(`{"name":"x","nodes":[],"nmae":"y"}`), nil, 400, "chain_decode", []string{"nmae"}},
		{"unknown node field", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo","colour":"red"}]}`), nil, 400, "chain_decode", []string{"colour"}},
		{"unknown kind", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"a","kind":"teleport"}]}`), nil, 400, "chain_decode", []string{"teleport"}},
		{"unknown edge field", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"a","via":"b"}]}`), nil, 400, "chain_decode", []string{"via"}},
		{"duplicate node ids", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"a","kind":"tool","name":"echo"}]}`), nil, 400, "chain_decode", []string{"duplicate", `"a"`}},
		{"duplicate edge ids", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],"edges":[{"id":"e","source":"a","target":"b"},{"id":"e","source":"a","target":"b"}]}`), nil, 400, "chain_decode", []string{"duplicate", `"e"`}},
		{"reserved node id", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"input","kind":"tool","name":"echo"}]}`), nil, 400, "chain_decode", []string{"input", "reserved"}},
		{"node id over 256 bytes", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"` + longID + `","kind":"tool","name":"echo"}]}`), nil, 400, "chain_decode", []string{"256"}},
		{"100,000 nodes", "POST", "/v1/chains", bytesBody(manyNodes(100_000)), nil, 400, "chain_decode", []string{"100000 nodes", "limit of 10000"}},
		{"50 MB body", "POST", "/v1/chains", bytesBody(big50), nil, 413, "request_entity_too_large", []string{"limit"}},
		{"50 MB chunked body", "POST", "/v1/validate", func() io.Reader { return unsized{strings.NewReader(string(big50))} }, nil, 413, "request_entity_too_large", []string{"limit"}},
		{"JSON nested 10,000 levels", "POST", "/v1/chains", str(deepInput), nil, 400, "chain_decode", []string{"depth"}},
		{"JSON nested 10,000 levels in run input", "POST", "/v1/chains/{chain}/runs", str(`{"input":{"x":` + nested(10_000) + `}}`), nil, 400, "bad_json", []string{"depth"}},
		{"invalid UTF-8", "POST", "/v1/chains", bytesBody(badUTF8), nil, 400, "chain_decode", []string{"UTF-8", "offset 13"}},
		{"invalid UTF-8 in validate", "POST", "/v1/validate", bytesBody(badUTF8), nil, 400, "chain_decode", []string{"UTF-8"}},
		{"1 MiB chain name", "POST", "/v1/chains", str(hugeName), nil, 422, "name_too_long", []string{"name", "1048576 bytes"}},
		{"expression over 16 KiB", "POST", "/v1/chains", str(`{"name":"x","nodes":[{"node_id":"a","kind":"branch","condition":"` + longExpr + `"}]}`), nil, 400, "chain_decode", []string{"condition", "limit"}},
		{"run input not an object", "POST", "/v1/chains/{chain}/runs", str(`{"input":[1,2]}`), nil, 400, "bad_json", []string{"input"}},
		{"run body unknown field", "POST", "/v1/chains/{chain}/runs", str(`{"inptu":{}}`), nil, 400, "bad_json", []string{"inptu"}},
		{"resume body wrong type", "POST", "/v1/runs/{run}/resume", str(`{"modified_state":"all"}`), nil, 400, "bad_json", []string{"modified_state"}},
		{"rerun from unknown node", "POST", "/v1/runs/{run}/rerun", str(`{"from_node":"nope"}`), nil, 422, "", []string{"nope"}},
		{"update without a version", "PUT", "/v1/chains/{chain}", str(fmt.Sprintf(linearDoc, "target")), nil, 428, "precondition_required", []string{"version"}},
		{"update with a garbage If-Match", "PUT", "/v1/chains/{chain}", str(fmt.Sprintf(linearDoc, "target")), []string{"If-Match", `"vx"`}, 400, "", []string{"If-Match"}},
		{"version not a number", "GET", "/v1/chains/{chain}/versions/abc", nil, nil, 400, "bad_parameter", []string{"version", "abc"}},
		{"list limit out of range", "GET", "/v1/chains?limit=100000", nil, nil, 400, "bad_parameter", []string{"limit"}},
		{"bad run cursor", "GET", "/v1/runs?before=garbage", nil, nil, 400, "bad_parameter", []string{"before"}},
		{"bad Last-Event-ID", "GET", "/v1/runs/{run}/events", nil, []string{"Last-Event-ID", "seven"}, 400, "", []string{"Last-Event-ID"}},
		{"unknown chain id", "GET", "/v1/chains/does-not-exist", nil, nil, 404, "not_found", []string{"does-not-exist"}},
		{"unknown run id", "GET", "/v1/runs/" + xss, nil, nil, 404, "", nil},
		{"A2E message of the wrong type", "POST", "/v1/a2e", str(`{"type":"chain/resp","chain_id":"x","nodes":[]}`), nil, 400, "chain_decode", []string{"chain/resp"}},
		{"A2E request with an unknown field", "POST", "/v1/a2e", str(`{"type":"chain/req","chain_id":"x","nodes":[],"bogus":1}`), nil, 400, "chain_decode", []string{"bogus"}},
		{"reserved chain name", "POST", "/v1/chains", str(`{"name":"__chain__evil","nodes":[]}`), nil, 422, "reserved_name", []string{"reserved"}},
		{"unknown export format", "GET", "/v1/chains/{chain}/export?format=exe", nil, nil, 400, "", []string{"exe"}},
	}

	issues := []issueCase{
		{"expression syntax error", `{"name":"x","nodes":[{"node_id":"a","kind":"branch","condition":"length(input.items"}]}`, "expression_syntax", []string{"condition"}},
		{"broken guard template", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"b","condition":"{{ output.x > }}"}]}`, "expression_syntax", nil},
		{"expression nested 5,000 levels", `{"name":"x","nodes":[{"node_id":"a","kind":"branch","condition":"` + strings.Repeat("(", 5000) + "input.x" + strings.Repeat(")", 5000) + `"}]}`, "expression_syntax", []string{"nest"}},
		{"guard nested 5,000 levels", `{"name":"x","nodes":[{"node_id":"a","kind":"branch","condition":"{{ ` + strings.Repeat("(", 5000) + "input.x" + strings.Repeat(")", 5000) + ` }}"}]}`, "expression_syntax", []string{"nest"}},
		{"loop without a cap", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"b"},{"source":"b","target":"a"}]}`, "chain_cycle", []string{"a -> b -> a"}},
		{"skill calling itself", `{"name":"selfie","nodes":[{"node_id":"s","kind":"skill","name":"selfie"}]}`, "skill_cycle", []string{"selfie"}},
		{"skill mutual recursion", `{"name":"ping","nodes":[{"node_id":"s","kind":"skill","name":"pong"}]}`, "skill_cycle", []string{"ping", "pong"}},
		{"unknown tool", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"rm_rf"}]}`, "unknown_tool", []string{"rm_rf"}},
		{"dangling edge", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"ghost"}]}`, "dangling_edge", []string{"ghost"}},
	}
	// pong calls ping: saved (and published, ping being a valid chain then)
	// first, so validating a ping that calls pong finds the cycle.
	createChain(t, ts, `{"name":"ping","nodes":[{"node_id":"e","kind":"tool","name":"echo"}]}`)
	createChain(t, ts, `{"name":"pong","nodes":[{"node_id":"s","kind":"skill","name":"ping"}]}`)

	items := make([]int, 10_001)
	runs := []runCase{
		{"map over more items than the limit", `{"name":"bigmap","nodes":[{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},{"node_id":"body","kind":"tool","name":"echo"}]}`,
			map[string]any{"items": items}, "m", []string{"10001 items", "limit of 10000"}, ""},
		{"read_file ../", toolChain("rf-up", "read_file", map[string]any{"path": "../secret.txt"}), nil, "t", []string{"escapes the workspace"}, ""},
		{"read_file absolute", toolChain("rf-abs", "read_file", map[string]any{"path": filepath.Join(outside, "secret.txt")}), nil, "t", []string{"absolute"}, ""},
		{"read_file through a symlink", toolChain("rf-link", "read_file", map[string]any{"path": "link.txt"}), nil, "t", []string{"symbolic link"}, ""},
		{"read_file through a symlinked folder", toolChain("rf-dir", "read_file", map[string]any{"path": "outdir/secret.txt"}), nil, "t", []string{"symbolic link"}, ""},
		{"write_file ../", toolChain("wf-up", "write_file", map[string]any{"path": "../../evil.txt", "content": "x"}), nil, "t", []string{"escapes the workspace"}, ""},
		{"write_file absolute", toolChain("wf-abs", "write_file", map[string]any{"path": "/tmp/evil.txt", "content": "x"}), nil, "t", []string{"absolute"}, ""},
		{"write_file through a symlinked folder", toolChain("wf-dir", "write_file", map[string]any{"path": "outdir/evil.txt", "content": "x"}), nil, "t", []string{"symbolic link"}, ""},
		{"proc with an executable that is not allowed", `{"name":"sh","nodes":[{"node_id":"p","kind":"proc","config":{"argv":["/bin/sh","-c","echo pwned"]}}]}`, nil, "p", []string{"/bin/sh", "not on the allow-list"}, ""},
		{"proc with a relative program", `{"name":"rel","nodes":[{"node_id":"p","kind":"proc","config":{"argv":["./true"]}}]}`, nil, "p", []string{"relative"}, ""},
		{"http to the metadata address", toolChain("meta", "http", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}), nil, "t", []string{"169.254.169.254"}, ""},
		{"http to a decimal metadata address", toolChain("meta10", "http", map[string]any{"url": "http://2852039166/latest/meta-data/"}), nil, "t", []string{"2852039166"}, ""},
		{"http to an IPv4-mapped metadata address", toolChain("meta6", "http", map[string]any{"url": "http://[::ffff:169.254.169.254]/"}), nil, "t", []string{"169.254.169.254", "link-local"}, ""},
		{"http to loopback", toolChain("loop", "http", map[string]any{"url": ts.URL + "/healthz"}), nil, "t", []string{"127.0.0.1"}, ""},
		{"http to IPv6 link-local", toolChain("ll6", "http", map[string]any{"url": "http://[fe80::1]/"}), nil, "t", []string{"fe80::1"}, ""},
		{"http to a non-http scheme", toolChain("file", "http", map[string]any{"url": "file:///etc/passwd"}), nil, "t", []string{"scheme"}, ""},
	}

	healthy := func(name string) {
		t.Helper()
		if r := do(t, ts, "GET", "/healthz", nil); r.status != 200 {
			t.Fatalf("after %s: /healthz answered %d", name, r.status)
		}
	}
	n := 0
	for _, tc := range api {
		t.Run("api/"+tc.name, func(t *testing.T) {
			path := strings.NewReplacer("{chain}", chainID, "{run}", runID).Replace(tc.path)
			var body io.Reader
			if tc.body != nil {
				body = tc.body()
			}
			req, err := http.NewRequest(tc.method, ts.URL+path, body)
			if err != nil {
				t.Fatal(err)
			}
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Accept", "application/json")
			for i := 0; i+1 < len(tc.headers); i += 2 {
				req.Header.Set(tc.headers[i], tc.headers[i+1])
			}
			res, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			rr := resp{status: res.StatusCode, header: res.Header, body: b}
			if rr.status != tc.status {
				t.Fatalf("status %d, want %d: %.500s", rr.status, tc.status, b)
			}
			code := rr.errCode(t)
			if tc.code != "" && code != tc.code {
				t.Errorf("code %q, want %q: %.500s", code, tc.code, b)
			}
			e, _ := rr.json(t)["error"].(map[string]any)
			msg, _ := e["message"].(string)
			for _, want := range tc.msg {
				if !strings.Contains(strings.ToLower(msg), strings.ToLower(want)) {
					t.Errorf("message %q does not name %q", msg, want)
				}
			}
			if strings.Contains(string(b), "goroutine ") || strings.Contains(string(b), ".go:") {
				t.Errorf("the answer leaks internals: %.500s", b)
			}
		})
		healthy(tc.name)
		n++
	}
	for _, tc := range issues {
		t.Run("validate/"+tc.name, func(t *testing.T) {
			r := do(t, ts, "POST", "/v1/validate", tc.doc)
			wantStatus(t, r, 200)
			var out struct {
				Issues []chain.Issue `json:"issues"`
				Valid  bool          `json:"valid"`
			}
			if err := json.Unmarshal(r.body, &out); err != nil {
				t.Fatal(err)
			}
			if out.Valid {
				t.Fatalf("valid: %s", r.body)
			}
			for _, is := range out.Issues {
				if is.Rule != tc.rule {
					continue
				}
				for _, want := range tc.msg {
					if !strings.Contains(strings.ToLower(is.Message), strings.ToLower(want)) {
						t.Errorf("issue %q does not name %q", is.Message, want)
					}
				}
				return
			}
			t.Fatalf("no %s issue: %.1000s", tc.rule, r.body)
		})
		healthy(tc.name)
		n++
	}
	for _, tc := range runs {
		t.Run("run/"+tc.name, func(t *testing.T) {
			id := createChain(t, ts, tc.doc)
			body := map[string]any{}
			if tc.input != nil {
				body["input"] = tc.input
			}
			r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", body)
			wantStatus(t, r, http.StatusAccepted)
			run := waitRun(t, ts, r.json(t)["run_id"].(string))
			want := tc.status
			if want == "" {
				want = "failed"
			}
			if run["status"] != want {
				t.Fatalf("run status %v, want %s: %v", run["status"], want, run["error"])
			}
			nodes, _ := run["nodes"].([]any)
			for _, x := range nodes {
				nd := x.(map[string]any)
				if nd["node_id"] != tc.node {
					continue
				}
				msg, _ := nd["error"].(string)
				for _, w := range tc.msg {
					if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
						t.Errorf("node %s error %q does not name %q", tc.node, msg, w)
					}
				}
				return
			}
			t.Fatalf("node %s has no result: %v", tc.node, run)
		})
		healthy(tc.name)
		n++
	}
	// Nothing leaked out of the workspace.
	for _, p := range []string{"/tmp/evil.txt", filepath.Join(outside, "evil.txt"), filepath.Join(filepath.Dir(filepath.Dir(outside)), "evil.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written outside the workspace", p)
		}
	}
	t.Logf("%d hostile cases", n)
	if n < 40 {
		t.Fatalf("only %d cases", n)
	}
	checkIntegrity(t, srv.DB.(*sqlite.DB).Path())
}

// checkIntegrity opens the database file afresh (migrations included) and
// runs PRAGMA integrity_check on it.
func checkIntegrity(t testing.TB, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatalf("reopen %s: %v", path, err)
	}
	defer db.Close()
	raw, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var res string
	if err := raw.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil {
		t.Fatal(err)
	}
	if res != "ok" {
		t.Fatalf("integrity_check: %s", res)
	}
}

// Agent YAML: anchors and aliases (the "billion laughs" bomb) are refused
// before anything expands, with a message naming them.
func TestHostileAgentYAML(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		yaml string
		msg  string
	}{
		"alias bomb": {`name: bomb
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`, "alias"},
		"merge key":      {"base: &base {tool: echo}\nname: merged\n<<: *base\n", "anchor"},
		"deep nesting":   {"name: deep\ninput: " + strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000) + "\ntool: echo\n", "deep"},
		"two documents":  {"name: one\ntool: echo\n---\nname: two\ntool: echo\n", "more than one"},
		"over 1 MiB":     {"name: big\ntool: echo\ndescription: " + strings.Repeat("x", 1<<20) + "\n", "limit"},
		"unknown field":  {"name: u\ntool: echo\ntoool: x\n", "toool"},
		"script in name": {"name: \"" + xss + "\"\ntool: echo\n", "name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "x"+agent.FileSuffix), []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := agent.LoadDir(dir, agent.LoadOptions{})
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.Contains(strings.ToLower(err.Error()), tc.msg) {
				t.Errorf("error %q does not name %q", err, tc.msg)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// HTML and script in every name, label, description and output are shown
// escaped by the pages.
func TestHostileMarkupIsEscaped(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	doc := map[string]any{
		"name": "chain " + xss, "description": "desc " + xss,
		"nodes": []map[string]any{
			{"node_id": "a", "kind": "tool", "name": "echo", "label": "label " + xss, "description": "node " + xss,
				"input": map[string]any{"out": xss}},
			{"node_id": "ask", "kind": "interrupt", "label": xss, "config": map[string]any{"prompt": "prompt " + xss}},
		},
		"edges": []map[string]any{{"source": "a", "target": "ask", "label": xss}},
	}
	r := do(t, ts, "POST", "/v1/chains", doc)
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", map[string]any{"input": map[string]any{"x": xss}})
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	waitRun(t, ts, run)
	for _, p := range []string{"/", "/chains/" + id, "/runs/" + run, "/chains/" + id + "/runs", "/chains/" + id + "/versions", "/runs/" + run + "/nodes/a", "/runs/" + run + "/controls", "/fragments/chains"} {
		r := do(t, ts, "GET", p, nil, "Accept", "text/html")
		if r.status != 200 {
			t.Errorf("GET %s: %d", p, r.status)
			continue
		}
		body := string(r.body)
		if strings.Contains(body, xss) {
			i := strings.Index(body, xss)
			t.Errorf("GET %s contains the raw script: …%s…", p, body[max(0, i-200):min(len(body), i+100)])
		}
		if p == "/" && !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("GET %s does not show the escaped name", p)
		}
	}
	// The error page escapes what it echoes back.
	r = do(t, ts, "GET", "/chains/"+strings.ReplaceAll(xss, "/", "%2F"), nil, "Accept", "text/html")
	if strings.Contains(string(r.body), xss) {
		t.Errorf("error page contains the raw script: %s", r.body)
	}
}
