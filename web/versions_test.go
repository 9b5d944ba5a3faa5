package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// POST /v1/chains/{id}/versions names the current version: a new version with
// the same document, kind "named"; the designer's autosaves are kind
// "autosave", API saves "save".
func TestNameVersionAPI(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "named versions"))
	for v := 1; v <= 3; v++ {
		doc := strings.Replace(fmt.Sprintf(linearDoc, "named versions"), `"input.x"`, fmt.Sprintf(`"input.x > %d"`, v), 1)
		r := do(t, ts, "POST", "/chains/"+id+"/save", fmt.Sprintf(`{"base_version":%d,"doc":%s}`, v, doc))
		wantStatus(t, r, 200)
		if r.header.Get("X-Save-State") != "saved" {
			t.Fatalf("autosave: %s", r.body)
		}
	}
	r := do(t, ts, "POST", "/v1/chains/"+id+"/versions", `{"message":"  Ready for review ","version":4}`)
	wantStatus(t, r, http.StatusCreated)
	if m := r.json(t); m["version"] != 5.0 || r.header.Get("ETag") != `"v5"` {
		t.Fatalf("named: %s %v", r.body, r.header)
	}
	r = do(t, ts, "GET", "/v1/chains/"+id+"/versions", nil)
	wantStatus(t, r, 200)
	var got []string
	for _, v := range r.json(t)["versions"].([]any) {
		m := v.(map[string]any)
		got = append(got, fmt.Sprintf("v%v %v %v", m["version"], m["kind"], m["message"]))
	}
	want := "v5 named Ready for review|v4 autosave edited in the designer|v3 autosave edited in the designer|v2 autosave edited in the designer|v1 save <nil>"
	if strings.Join(got, "|") != want {
		t.Fatalf("versions:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	r = do(t, ts, "GET", "/v1/chains/"+id+"/diff?from=4&to=5", nil)
	if r.json(t)["empty"] != true {
		t.Fatalf("a named version has the content it names: %s", r.body)
	}

	// Bad requests name what is wrong.
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"message":"  "}`, 400, "message_required"},
		{`{}`, 400, "message_required"},
		{`{"message":"` + strings.Repeat("x", 501) + `"}`, 400, "message_too_long"},
		{`{"message":"x","version":-1}`, 400, "bad_parameter"},
		{`{"message":"x","nope":1}`, 400, ""},
		{`{"message":"x","version":4}`, 409, "version_conflict"},
	} {
		r := do(t, ts, "POST", "/v1/chains/"+id+"/versions", tc.body)
		wantStatus(t, r, tc.status)
		if tc.code != "" && r.errCode(t) != tc.code {
			t.Errorf("%s: code %q, want %q", tc.body, r.errCode(t), tc.code)
		}
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/nope/versions", `{"message":"x"}`), 404)
}

// The history folds a burst of autosaves into one row ("3 edits, …") and
// shows a named version apart; the diff shows each changed value old → new.
func TestVersionsPageBurstsAndDiff(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "history page"))
	for v := 1; v <= 3; v++ {
		doc := strings.Replace(fmt.Sprintf(linearDoc, "history page"), `"input.x"`, fmt.Sprintf(`"input.x > %d"`, v), 1)
		wantStatus(t, do(t, ts, "POST", "/chains/"+id+"/save", fmt.Sprintf(`{"base_version":%d,"doc":%s}`, v, doc)), 200)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/versions", `{"message":"Before <the> review"}`), 201)
	r := do(t, ts, "GET", "/chains/"+id+"/versions?v=1", nil, "Accept", "text/html")
	wantStatus(t, r, 200)
	page := string(r.body)
	for _, want := range []string{
		`<span class="burst-range">v2–v4</span>`,
		`3 edits, under a minute`,
		`<span class="badge named">named</span>`,
		`Before &lt;the&gt; review`,
		`<code>input_map.x</code>`,
		`<pre>input.x</pre>`,
		`<pre>input.x &gt; 3</pre>`,
		`<th scope="col">current v5</th>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("versions page lacks %s", want)
		}
	}
	if n := strings.Count(page, `<li class="version`); n != 5 {
		t.Errorf("%d version rows, want 5 (3 of them inside the burst)", n)
	}
}

// GET /v1/chains/{id}/diff answers with the whole comparison of the two
// versions' documents, field by field, in this exact form.
func TestDiffVersionsBody(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "diffed"))
	v2 := `{"name":"diffed","description":"d","nodes":[
		{"node_id":"a","kind":"tool","name":"echo","input_map":{"x":"input.x > 1"},"position":{"x":5,"y":6}},
		{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, v2, "If-Match", `"v1"`), 200)
	for query, want := range map[string]string{
		"from=1&to=2": `{"chain_id":"` + id + `","diff":{"chain":["description"],"chain_changes":[{"field":"description","new":"d"}],"nodes_added":["c"],` +
			`"nodes_changed":[{"node_id":"a","fields":["input_map","position"],"changes":[{"field":"input_map.x","old":"input.x","new":"input.x \u003e 1"},{"field":"position","new":{"x":5,"y":6}}]}],` +
			`"edges_added":["b-\u003ec"]},"empty":false,"from":1,"to":2}` + "\n",
		"from=2&to=1": `{"chain_id":"` + id + `","diff":{"chain":["description"],"chain_changes":[{"field":"description","old":"d"}],"nodes_removed":["c"],` +
			`"nodes_changed":[{"node_id":"a","fields":["input_map","position"],"changes":[{"field":"input_map.x","old":"input.x \u003e 1","new":"input.x"},{"field":"position","old":{"x":5,"y":6}}]}],` +
			`"edges_removed":["b-\u003ec"]},"empty":false,"from":2,"to":1}` + "\n",
		"from=2&to=2": `{"chain_id":"` + id + `","diff":{},"empty":true,"from":2,"to":2}` + "\n",
	} {
		r := do(t, ts, "GET", "/v1/chains/"+id+"/diff?"+query, nil)
		wantStatus(t, r, 200)
		if string(r.body) != want {
			t.Errorf("%s:\n got %s\nwant %s", query, r.body, want)
		}
	}
}
