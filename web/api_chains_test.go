package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
)

func TestCreateChain(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)

	r := do(t, ts, "POST", "/v1/chains", fmt.Sprintf(linearDoc, "first"))
	wantStatus(t, r, http.StatusCreated)
	m := r.json(t)
	id := m["id"].(string)
	if loc := r.header.Get("Location"); loc != "/v1/chains/"+id {
		t.Fatalf("Location %q", loc)
	}
	if r.header.Get("ETag") != `"v1"` || m["version"].(float64) != 1 || m["valid"] != true {
		t.Fatalf("created: %s (etag %s)", r.body, r.header.Get("ETag"))
	}

	// An A2E chain/req is a chain document too; chain_id becomes the name.
	r = do(t, ts, "POST", "/v1/chains", `{"type":"chain/req","id":"r1","chain_id":"from-a2e","entry_node":"a","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`)
	wantStatus(t, r, http.StatusCreated)
	if r.json(t)["name"] != "from-a2e" {
		t.Fatalf("a2e create: %s", r.body)
	}

	// A chain with errors can be saved: the issues come back.
	r = do(t, ts, "POST", "/v1/chains", `{"name":"broken","nodes":[{"node_id":"a","kind":"tool","name":"no_such_tool"}]}`)
	wantStatus(t, r, http.StatusCreated)
	if r.json(t)["valid"] != false || !strings.Contains(string(r.body), "unknown_tool") {
		t.Fatalf("broken chain: %s", r.body)
	}

	tests := []struct {
		name, body string
		status     int
		code       string
	}{
		{"duplicate name", fmt.Sprintf(linearDoc, "first"), 409, "name_taken"},
		{"no name", `{"nodes":[]}`, 422, "name_required"},
		{"reserved name", fmt.Sprintf(linearDoc, "__chain__agent"), 422, "reserved_name"},
		{"malformed JSON", "{\n  \"name\": \"x\",\n  \"nodes\": [,]\n}", 400, "chain_decode"},
		{"unknown field", `{"name":"x","nodes":[],"colour":"red"}`, 400, "chain_decode"},
		{"unknown kind", `{"name":"x","nodes":[{"node_id":"a","kind":"bogus"}]}`, 400, "chain_decode"},
		{"empty body", ``, 400, "chain_decode"},
		{"not an object", `[1,2]`, 400, "chain_decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, ts, "POST", "/v1/chains", tt.body)
			wantStatus(t, r, tt.status)
			if got := r.errCode(t); got != tt.code {
				t.Fatalf("code %q, want %q: %s", got, tt.code, r.body)
			}
		})
	}
	// Malformed JSON names the line and column; unknown fields name the path.
	r = do(t, ts, "POST", "/v1/chains", "{\n  \"name\": \"x\",\n  \"nodes\": [,]\n}")
	if !strings.Contains(string(r.body), "line 3, column 13") {
		t.Fatalf("no line/column: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/chains", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","nmae":"echo"}]}`)
	if d := r.errDetails(t); d["path"] != `nodes[0] "a".nmae` {
		t.Fatalf("details %v", d)
	}
}

func TestListChains(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	for _, n := range []string{"alpha", "beta", "alphabet", "gamma"} {
		createChain(t, ts, fmt.Sprintf(linearDoc, n))
	}
	r := do(t, ts, "GET", "/v1/chains?q=ALPHA", nil)
	wantStatus(t, r, 200)
	m := r.json(t)
	if m["total"].(float64) != 2 || len(m["chains"].([]any)) != 2 {
		t.Fatalf("search: %s", r.body)
	}
	first := m["chains"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "name", "version", "updated", "node_count"} {
		if _, ok := first[k]; !ok {
			t.Fatalf("summary lacks %s: %v", k, first)
		}
	}
	r = do(t, ts, "GET", "/v1/chains?limit=2&offset=2", nil)
	m = r.json(t)
	if m["total"].(float64) != 4 || len(m["chains"].([]any)) != 2 || m["chains"].([]any)[0].(map[string]any)["name"] != "beta" {
		t.Fatalf("page: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/chains?q=nothing", nil)
	if !strings.Contains(string(r.body), `"chains":[]`) {
		t.Fatalf("empty list must be []: %s", r.body)
	}
	for _, q := range []string{"limit=abc", "limit=0", "limit=5000", "offset=-1"} {
		r := do(t, ts, "GET", "/v1/chains?"+q, nil)
		wantStatus(t, r, 400)
		if r.errCode(t) != "bad_parameter" {
			t.Fatalf("%s: %s", q, r.body)
		}
	}
	// The last run's status is listed.
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "ran"))
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":1}}`)
	wantStatus(t, r, 202)
	waitRun(t, ts, r.json(t)["run_id"].(string))
	r = do(t, ts, "GET", "/v1/chains?q=ran", nil)
	if !strings.Contains(string(r.body), `"last_run_status":"completed"`) {
		t.Fatalf("no last run status: %s", r.body)
	}
}

func TestGetUpdateDeleteChain(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "c"))

	r := do(t, ts, "GET", "/v1/chains/"+id, nil)
	wantStatus(t, r, 200)
	if r.header.Get("ETag") != `"v1"` || r.json(t)["doc"] == nil {
		t.Fatalf("get: %v %s", r.header, r.body)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id, nil, "If-None-Match", `"v1"`), http.StatusNotModified)
	r = do(t, ts, "GET", "/v1/chains/nope", nil)
	wantStatus(t, r, 404)
	if !strings.Contains(r.json(t)["error"].(map[string]any)["message"].(string), `"nope"`) {
		t.Fatalf("404 message does not name the id: %s", r.body)
	}

	v2 := fmt.Sprintf(linearDoc, "c2")
	// No version at all: 428; unknown chain: 404 even without a version.
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, v2), http.StatusPreconditionRequired)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/nope", v2, "If-Match", `"v1"`), 404)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/nope", v2), 404)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, v2, "If-Match", `garbage`), 400)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id+"?version=x", v2), 400)
	// If-Match.
	r = do(t, ts, "PUT", "/v1/chains/"+id, v2, "If-Match", `"v1"`)
	wantStatus(t, r, 200)
	if r.header.Get("ETag") != `"v2"` || r.json(t)["name"] != "c2" {
		t.Fatalf("put: %s", r.body)
	}
	// Stale: 409 with the current version.
	r = do(t, ts, "PUT", "/v1/chains/"+id, v2, "If-Match", `"v1"`)
	wantStatus(t, r, 409)
	if r.errCode(t) != "version_conflict" || r.errDetails(t)["current_version"].(float64) != 2 {
		t.Fatalf("stale: %s", r.body)
	}
	// ?version= and the wrapped form.
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id+"?version=2", fmt.Sprintf(linearDoc, "c3")), 200)
	r = do(t, ts, "PUT", "/v1/chains/"+id, `{"version":3,"message":"wrapped","doc":`+fmt.Sprintf(linearDoc, "c4")+`}`)
	wantStatus(t, r, 200)
	if r.json(t)["version"].(float64) != 4 {
		t.Fatalf("wrapped: %s", r.body)
	}
	// Name clash, reserved name, bad document.
	createChain(t, ts, fmt.Sprintf(linearDoc, "other"))
	r = do(t, ts, "PUT", "/v1/chains/"+id, fmt.Sprintf(linearDoc, "other"), "If-Match", `"v4"`)
	wantStatus(t, r, 409)
	if r.errCode(t) != "name_taken" {
		t.Fatalf("clash: %s", r.body)
	}
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, fmt.Sprintf(linearDoc, "__chain__x"), "If-Match", `"v4"`), 422)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, `{"name":"x","nodes":{}}`, "If-Match", `"v4"`), 400)

	wantStatus(t, do(t, ts, "DELETE", "/v1/chains/"+id, nil), 204)
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id, nil), 404)
	wantStatus(t, do(t, ts, "DELETE", "/v1/chains/"+id, nil), 404)
	// Deleted frees the name.
	createChain(t, ts, fmt.Sprintf(linearDoc, "c4"))
}

func TestVersionsRestoreDiff(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "v"))
	three := `{"name":"v","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id+"?message=add+c", three, "If-Match", `"v1"`), 200)

	r := do(t, ts, "GET", "/v1/chains/"+id+"/versions", nil)
	wantStatus(t, r, 200)
	vs := r.json(t)["versions"].([]any)
	if len(vs) != 2 || vs[0].(map[string]any)["version"].(float64) != 2 || vs[0].(map[string]any)["message"] != "add c" {
		t.Fatalf("versions: %s", r.body)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/chains/nope/versions", nil), 404)

	r = do(t, ts, "GET", "/v1/chains/"+id+"/versions/1", nil)
	wantStatus(t, r, 200)
	if len(r.json(t)["doc"].(map[string]any)["nodes"].([]any)) != 2 {
		t.Fatalf("version 1: %s", r.body)
	}
	for path, status := range map[string]int{
		"/versions/x": 400, "/versions/0": 400, "/versions/-1": 400, "/versions/9": 404,
	} {
		r := do(t, ts, "GET", "/v1/chains/"+id+path, nil)
		wantStatus(t, r, status)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/chains/nope/versions/1", nil), 404)

	r = do(t, ts, "GET", "/v1/chains/"+id+"/diff?from=1&to=2", nil)
	wantStatus(t, r, 200)
	if !strings.Contains(string(r.body), `"nodes_added":["c"]`) {
		t.Fatalf("diff: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/chains/"+id+"/diff", nil) // defaults: previous → current
	wantStatus(t, r, 200)
	if m := r.json(t); m["from"].(float64) != 1 || m["to"].(float64) != 2 {
		t.Fatalf("diff defaults: %s", r.body)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id+"/diff?from=a", nil), 400)
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id+"/diff?from=1&to=7", nil), 404)
	wantStatus(t, do(t, ts, "GET", "/v1/chains/nope/diff?from=1&to=2", nil), 404)

	r = do(t, ts, "POST", "/v1/chains/"+id+"/versions/1/restore", nil)
	wantStatus(t, r, 200)
	if m := r.json(t); m["version"].(float64) != 3 || r.header.Get("ETag") != `"v3"` {
		t.Fatalf("restore: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/chains/"+id, nil)
	if len(r.json(t)["doc"].(map[string]any)["nodes"].([]any)) != 2 {
		t.Fatalf("restored content: %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/versions/x/restore", nil), 400)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/versions/99/restore", nil), 404)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/nope/versions/1/restore", nil), 404)
}

func TestValidateEndpoint(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	createChain(t, ts, `{"name":"sub","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`)

	r := do(t, ts, "POST", "/v1/validate", fmt.Sprintf(linearDoc, "x"))
	wantStatus(t, r, 200)
	if m := r.json(t); m["valid"] != true || len(m["issues"].([]any)) != 0 {
		t.Fatalf("valid: %s", r.body)
	}
	// Decodes but invalid: 200 with the issues (unknown tool, unknown chain).
	r = do(t, ts, "POST", "/v1/validate", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"nope"},{"node_id":"b","kind":"skill","name":"missing"},{"node_id":"c","kind":"skill","name":"sub"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`)
	wantStatus(t, r, 200)
	body := string(r.body)
	if r.json(t)["valid"] != false || !strings.Contains(body, "unknown_tool") || !strings.Contains(body, "unknown_chain") || strings.Contains(body, `"sub\"`) {
		t.Fatalf("invalid: %s", body)
	}
	// An A2E request validates too.
	r = do(t, ts, "POST", "/v1/validate", `{"type":"chain/req","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`)
	wantStatus(t, r, 200)
	if r.json(t)["format"] != "a2e" {
		t.Fatalf("a2e: %s", r.body)
	}
	// Not a chain: 400 with the path.
	r = do(t, ts, "POST", "/v1/validate", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","retry":{"max_attempts":"3"}}]}`)
	wantStatus(t, r, 400)
	if d := r.errDetails(t); d["path"] != `nodes[0] "a".retry.max_attempts` {
		t.Fatalf("path: %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/validate", `{"name":`), 400)
}

// Export says which version it wrote: by default the published one (what
// triggers and runs by name run), the draft on request, or a number; a file's
// name and headers name it, and its tests are those of that version.
func TestExportPublishedOrDraft(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "exported"))
	ch := do(t, ts, "GET", "/v1/chains/"+id, nil).json(t)
	doc := ch["doc"].(map[string]any)
	doc["description"] = "the draft"
	b, _ := json.Marshal(doc)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id+"?version=1", string(b)), http.StatusOK)

	for _, tc := range []struct{ query, which, version, file, has, lacks string }{
		{"", "published", "1", "exported.v1.published.chain.json", "", "the draft"},
		{"?version=published", "published", "1", "exported.v1.published.chain.json", "", "the draft"},
		{"?version=draft", "draft", "2", "exported.v2.draft.chain.json", "the draft", ""},
		{"?version=1", "version", "1", "exported.v1.chain.json", "", "the draft"},
		{"?version=draft&format=a2e", "draft", "2", "exported.v2.draft.a2e.json", "", ""},
	} {
		r := do(t, ts, "GET", "/v1/chains/"+id+"/export"+tc.query, nil)
		wantStatus(t, r, http.StatusOK)
		if r.header.Get("X-Chain-Export") != tc.which || r.header.Get("X-Chain-Version") != tc.version {
			t.Errorf("export%s: X-Chain-Export %q X-Chain-Version %q, want %s v%s", tc.query, r.header.Get("X-Chain-Export"), r.header.Get("X-Chain-Version"), tc.which, tc.version)
		}
		if cd := r.header.Get("Content-Disposition"); !strings.Contains(cd, `filename="`+tc.file+`"`) {
			t.Errorf("export%s: Content-Disposition %q, want %s", tc.query, cd, tc.file)
		}
		if tc.has != "" && !strings.Contains(string(r.body), tc.has) || tc.lacks != "" && strings.Contains(string(r.body), tc.lacks) {
			t.Errorf("export%s wrote the wrong version:\n%s", tc.query, r.body)
		}
	}
	r := do(t, ts, "GET", "/v1/chains/"+id+"/export?version=next", nil)
	wantStatus(t, r, http.StatusBadRequest)
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id+"/export?version=9", nil), http.StatusNotFound)

	// A chain never published exports its draft by default, and says so;
	// asking for its published version is a conflict that says what to do.
	blank := createChain(t, ts, `{"name":"never","nodes":[{"node_id":"a","kind":"tool","name":"no-such-tool"}]}`)
	r = do(t, ts, "GET", "/v1/chains/"+blank+"/export", nil)
	wantStatus(t, r, http.StatusOK)
	if r.header.Get("X-Chain-Export") != "draft" {
		t.Errorf("a never-published chain's export: %q", r.header.Get("X-Chain-Export"))
	}
	r = do(t, ts, "GET", "/v1/chains/"+blank+"/export?version=published", nil)
	wantStatus(t, r, http.StatusConflict)
	if r.errCode(t) != "not_published" || !strings.Contains(string(r.body), "version=draft") {
		t.Errorf("published export of a never-published chain: %s", r.body)
	}
}

func TestExportImport(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, `My \"chain\"`))

	r := do(t, ts, "GET", "/v1/chains/"+id+"/export", nil)
	wantStatus(t, r, 200)
	cd := r.header.Get("Content-Disposition")
	if !strings.HasPrefix(cd, `attachment; filename="My _chain_.v1.published.chain.json"`) || !strings.Contains(cd, "filename*=UTF-8''My%20%22chain%22.v1.published.chain.json") {
		t.Fatalf("Content-Disposition %q", cd)
	}
	studio := r.body

	r = do(t, ts, "GET", "/v1/chains/"+id+"/export?format=a2e", nil)
	wantStatus(t, r, 200)
	if !strings.Contains(r.header.Get("Content-Disposition"), `.a2e.json"`) {
		t.Fatalf("a2e filename: %s", r.header.Get("Content-Disposition"))
	}
	m := r.json(t)
	if m["type"] != "chain/req" || m["chain_id"] != `My "chain"` || !strings.Contains(string(r.body), `"next_node": "b"`) {
		t.Fatalf("a2e export: %s", r.body)
	}
	a2e := r.body
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id+"/export?format=yaml", nil), 400)
	wantStatus(t, do(t, ts, "GET", "/v1/chains/nope/export", nil), 404)

	// Not expressible in A2E: 422 naming the edge.
	cid := createChain(t, ts, `{"name":"cond","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],
		"edges":[{"id":"guarded","source":"a","target":"b","condition":"output.x"}]}`)
	r = do(t, ts, "GET", "/v1/chains/"+cid+"/export?format=a2e", nil)
	wantStatus(t, r, 422)
	if r.errCode(t) != "not_expressible" || r.errDetails(t)["edge_id"] != "guarded" {
		t.Fatalf("422: %s", r.body)
	}

	// Import both formats: the name is taken, so " (2)", " (3)".
	r = do(t, ts, "POST", "/v1/chains/import", studio)
	wantStatus(t, r, 201)
	if r.json(t)["name"] != `My "chain" (2)` {
		t.Fatalf("import: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/chains/import", a2e)
	wantStatus(t, r, 201)
	if r.json(t)["name"] != `My "chain" (3)` || r.header.Get("Location") == "" {
		t.Fatalf("import a2e: %s", r.body)
	}
	// validate=only saves nothing.
	r = do(t, ts, "POST", "/v1/chains/import?validate=only", `{"name":"dry","nodes":[{"node_id":"a","kind":"tool","name":"nope"}]}`)
	wantStatus(t, r, 200)
	if m := r.json(t); m["valid"] != false || m["doc"] == nil {
		t.Fatalf("validate only: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/chains?q=dry", nil)
	if r.json(t)["total"].(float64) != 0 {
		t.Fatalf("validate=only saved: %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/import?validate=maybe", studio), 400)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/import", `{"nodes":[}`), 400)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/import", fmt.Sprintf(linearDoc, "__chain__z")), 422)
}

func TestBodyLimitIs413JSON(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerWith(t, Config{BodyLimit: 1024}, testRegistry())
	big := `{"name":"x","description":"` + strings.Repeat("a", 4096) + `","nodes":[]}`
	r := do(t, ts, "POST", "/v1/chains", big)
	wantStatus(t, r, http.StatusRequestEntityTooLarge)
	if r.errCode(t) != "request_entity_too_large" {
		t.Fatalf("413: %s", r.body)
	}
	// Without a Content-Length (chunked) the limit is hit while reading.
	req, _ := http.NewRequest("POST", ts.URL+"/v1/validate", struct{ *strings.Reader }{strings.NewReader(big)})
	req.ContentLength = -1
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("chunked oversize: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

// A PUT or PATCH that changes nothing answers 200 with the same ETag and
// makes no version; a real change still makes one.
func TestNoOpSaveKeepsVersion(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "same"))
	versions := func() int {
		t.Helper()
		vs, err := srv.DB.ListVersions(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return len(vs)
	}
	r := do(t, ts, "GET", "/v1/chains/"+id, nil)
	wantStatus(t, r, 200)
	doc, _ := json.Marshal(r.json(t)["doc"])
	for _, body := range []string{fmt.Sprintf(linearDoc, "same"), string(doc)} {
		r = do(t, ts, "PUT", "/v1/chains/"+id, body, "If-Match", `"v1"`)
		wantStatus(t, r, 200)
		if r.header.Get("ETag") != `"v1"` || r.json(t)["version"].(float64) != 1 {
			t.Fatalf("no-op PUT: ETag %q, %s", r.header.Get("ETag"), r.body)
		}
	}
	// A patch that sets what is already there.
	patch := `{"nodes": [{"node_id": "a", "kind": "tool", "name": "echo", "input_map": {"x": "input.x"}}]}`
	r = do(t, ts, "PATCH", "/v1/chains/"+id, patch, "If-Match", `"v1"`)
	wantStatus(t, r, 200)
	if r.header.Get("ETag") != `"v1"` || r.json(t)["version"].(float64) != 1 {
		t.Fatalf("no-op PATCH: ETag %q, %s", r.header.Get("ETag"), r.body)
	}
	if n := versions(); n != 1 {
		t.Fatalf("%d versions after no-op saves, want 1", n)
	}
	r = do(t, ts, "PUT", "/v1/chains/"+id, fmt.Sprintf(linearDoc, "renamed"), "If-Match", `"v1"`)
	wantStatus(t, r, 200)
	if r.header.Get("ETag") != `"v2"` || versions() != 2 {
		t.Fatalf("a real change: ETag %q, %d versions", r.header.Get("ETag"), versions())
	}
}

// The editor's read-only view of a skill node's chain finds it by its exact
// name: a name no chain has is an empty list.
func TestListChainsByName(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ch := patchTestChain(t, srv)
	if _, err := srv.DB.CreateChain(context.Background(), &chain.Chain{Name: "pt two", Nodes: []chain.Node{{ID: "a", Kind: chain.KindTool, Name: "echo"}}}, "", true); err != nil {
		t.Fatal(err)
	}
	r := do(t, ts, "GET", "/v1/chains?name=pt", nil)
	wantStatus(t, r, http.StatusOK)
	rows, _ := r.json(t)["chains"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["id"] != ch.ID || rows[0].(map[string]any)["version"].(float64) != 1 {
		t.Errorf("by name: %s", r.body)
	}
	for _, name := range []string{"nope", "PT", "p"} {
		r = do(t, ts, "GET", "/v1/chains?name="+url.QueryEscape(name), nil)
		wantStatus(t, r, http.StatusOK)
		if rows, _ := r.json(t)["chains"].([]any); len(rows) != 0 || r.json(t)["total"].(float64) != 0 {
			t.Errorf("name %q is not exactly a chain's: %s", name, r.body)
		}
	}
}
