package web

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/ops"
)

func form(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

// New chain asks for the name: empty, too long, reserved and taken names are
// refused inline and nothing is created; a good one opens the new chain.
func TestPageNewChainAsksForName(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ctx := context.Background()
	createChain(t, ts, fmt.Sprintf(linearDoc, "taken"))
	count := func() int {
		_, n, err := srv.DB.ListChains(ctx, store.ChainFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, tc := range []struct{ name, want string }{
		{"", "Give the chain a name"},
		{"   ", "Give the chain a name"},
		{strings.Repeat("é", 200), "400 bytes long; the limit is 256"},
		{"__chain__x", "reserved"},
		{"taken", "A chain named “taken” already exists"},
		{" taken ", "A chain named “taken” already exists"},
	} {
		res, body := pageDo(t, ts.URL, "POST", "/chains/new", "application/x-www-form-urlencoded", form("name", tc.name))
		if res.StatusCode != http.StatusOK || res.Header.Get("HX-Redirect") != "" {
			t.Fatalf("name %q: status %d, redirect %q", tc.name, res.StatusCode, res.Header.Get("HX-Redirect"))
		}
		if !strings.Contains(body, tc.want) || !strings.Contains(body, `id="new-name-error"`) {
			t.Errorf("name %q: want %q in %s", tc.name, tc.want, body)
		}
	}
	if n := count(); n != before {
		t.Fatalf("refused names created chains: %d → %d", before, n)
	}
	res, _ := pageDo(t, ts.URL, "POST", "/chains/new", "application/x-www-form-urlencoded", form("name", "  Invoices  "))
	ch, err := srv.DB.GetChainByName(ctx, "Invoices")
	if err != nil {
		t.Fatalf("the chain was not created under its trimmed name: %v", err)
	}
	if got := res.Header.Get("HX-Redirect"); got != "/chains/"+ch.ID {
		t.Errorf("HX-Redirect = %q, want the new chain's editor", got)
	}
}

// New chain… from a template: the template's nodes and tests under the
// name typed, or the template's own name when none is; an unknown template
// or a taken name is said in the dialog and creates nothing.
func TestPageNewFromTemplate(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ctx := context.Background()
	_, page := pageDo(t, ts.URL, "GET", "/", "", "")
	if !strings.Contains(page, `id="new-from-template"`) || !strings.Contains(page, `name="template" value="map-code"`) {
		t.Fatalf("the chains page offers no templates:\n%s", page)
	}
	res, _ := pageDo(t, ts.URL, "POST", "/chains/new", "application/x-www-form-urlencoded", form("name", "", "template", "map-code"))
	tmpl, _ := srv.Template("map-code")
	ch, err := srv.DB.GetChainByName(ctx, tmpl.Name)
	if err != nil {
		t.Fatalf("no chain under the template's name: %v", err)
	}
	if res.Header.Get("HX-Redirect") != "/chains/"+ch.ID || len(ch.Doc.Nodes) != len(tmpl.Nodes) || len(ch.Doc.Tests) != len(tmpl.Tests) {
		t.Fatalf("redirect %q, %d nodes, %d tests", res.Header.Get("HX-Redirect"), len(ch.Doc.Nodes), len(ch.Doc.Tests))
	}
	pageDo(t, ts.URL, "POST", "/chains/new", "application/x-www-form-urlencoded", form("name", "Orders", "template", "map-code"))
	if _, err := srv.DB.GetChainByName(ctx, "Orders"); err != nil {
		t.Fatalf("no chain under the name typed: %v", err)
	}
	count := func() int {
		_, n, _ := srv.DB.ListChains(ctx, store.ChainFilter{Limit: 1})
		return n
	}
	before := count()
	// A refused name marks the name field, as for a blank chain; a template
	// the studio does not have is a 404 said in the dialog (htmx swaps it),
	// with the name left unmarked.
	for _, tc := range []struct {
		name, tmpl string
		status     int
		want       string
		nameMarked bool
	}{
		{"", "nope", http.StatusNotFound, `This studio has no template "nope"; reload the page`, false},
		{"Orders", "../map-code", http.StatusNotFound, `This studio has no template "../map-code"`, false},
		{"Orders", "map-code", http.StatusOK, "A chain named “Orders” already exists", true},
		{"__chain__x", "map-code", http.StatusOK, "reserved", true},
	} {
		res, body := pageDo(t, ts.URL, "POST", "/chains/new", "application/x-www-form-urlencoded", form("name", tc.name, "template", tc.tmpl))
		if res.StatusCode != tc.status || res.Header.Get("HX-Redirect") != "" || !strings.Contains(html.UnescapeString(body), tc.want) ||
			strings.Contains(body, "data-invalid") != tc.nameMarked || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%q from %q: %d %q %s", tc.name, tc.tmpl, res.StatusCode, res.Header.Get("HX-Redirect"), body)
		}
	}
	if count() != before {
		t.Fatalf("refused requests created chains")
	}
}

// The Import dialog takes a taken name the way the API does: "name (2)".
func TestPageImportTakenNameLikeAPI(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ctx := context.Background()
	doc := fmt.Sprintf(linearDoc, "dup")
	first := createChain(t, ts, doc)
	res, body := pageDo(t, ts.URL, "POST", "/chains/import", "application/x-www-form-urlencoded", form("json", doc))
	ch, err := srv.DB.GetChainByName(ctx, "dup (2)")
	if err != nil {
		t.Fatalf("not imported as %q: %v; %s", "dup (2)", err, body)
	}
	if res.Header.Get("HX-Redirect") != "/chains/"+ch.ID {
		t.Errorf("HX-Redirect = %q", res.Header.Get("HX-Redirect"))
	}
	r := do(t, ts, "POST", "/v1/chains/import", doc)
	wantStatus(t, r, http.StatusCreated)
	if got := r.json(t)["name"]; got != "dup (3)" {
		t.Errorf("API import after the page's: name %v, want dup (3)", got)
	}
	// an A2E message through the page, as through the API
	ex := do(t, ts, "GET", "/v1/chains/"+first+"/export?format=a2e", nil)
	wantStatus(t, ex, http.StatusOK)
	a2e := string(ex.body)
	pageDo(t, ts.URL, "POST", "/chains/import", "application/x-www-form-urlencoded", form("json", a2e))
	if _, err := srv.DB.GetChainByName(ctx, "dup (4)"); err != nil {
		t.Errorf("A2E import through the page: %v", err)
	}
}

// A document with several bad nodes, a bad edge and a bad top-level field:
// every one is reported, each with its path and line:column; nothing saved.
func TestImportReportsEveryProblem(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	doc := `{
  "name": "broken",
  "timeout": "soon",
  "nodes": [
    {"node_id": "a", "kind": "tool", "retry": {"max_attempts": "3"}},
    {"node_id": "b", "kind": "tool", "name": "echo"},
    {"node_id": "c", "kind": "nope", "timeout": -1},
    {"node_id": "d", "kind": "tool", "labl": "x"},
    {"node_id": "b", "kind": "tool"}
  ],
  "edges": [
    {"source": "a", "target": "b"},
    {"source": "b", "target": "c", "max_iterations": "many"}
  ]
}`
	want := []struct{ path, msg string }{
		{"timeout", "wrong type"},
		{`nodes[0] "a".retry.max_attempts`, "wrong type"},
		{`nodes[2] "c".kind`, `unknown kind "nope"`},
		{`nodes[2] "c".timeout`, "≥ 0"},
		{`nodes[3] "d".labl`, "unknown field"},
		{`nodes[4] "b".node_id`, "duplicate node id"},
		{`edges[1] "b" -> "c".max_iterations`, "wrong type"},
	}
	lines := map[string]int{"timeout": 3, `nodes[0] "a".retry.max_attempts`: 5, `nodes[2] "c".kind`: 7, `nodes[2] "c".timeout`: 7, `nodes[3] "d".labl`: 8, `nodes[4] "b".node_id`: 9, `edges[1] "b" -> "c".max_iterations`: 13}

	got := ops.DecodeProblems([]byte(doc), srv.cfg.Limits)
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Path != w.path || !strings.Contains(g.Message, w.msg) {
			t.Errorf("problem %d = %q %q, want %q …%q…", i, g.Path, g.Message, w.path, w.msg)
		}
		if g.Line != lines[w.path] || g.Column < 1 {
			t.Errorf("problem %q at %d:%d, want line %d", g.Path, g.Line, g.Column, lines[w.path])
		}
	}
	// the field's own column: "max_attempts": "3" — the value starts at column 53
	if g := got[1]; g.Column != strings.Index(strings.Split(doc, "\n")[4], `"3"`)+1 {
		t.Errorf("max_attempts column %d", g.Column)
	}

	// the page lists them all, nothing saved
	_, body := pageDo(t, ts.URL, "POST", "/chains/import", "application/x-www-form-urlencoded", form("json", doc))
	if n := strings.Count(body, "<li "); n != len(want) {
		t.Errorf("the page lists %d problems, want %d: %s", n, len(want), body)
	}
	if !strings.Contains(body, "line 5, column") || !strings.Contains(body, "7 problems") {
		t.Errorf("the page does not say where: %s", body)
	}
	if _, err := srv.DB.GetChainByName(context.Background(), "broken"); err == nil {
		t.Error("a document that does not decode was saved")
	}
	// the API carries the same list
	r := do(t, ts, "POST", "/v1/chains/import", doc)
	wantStatus(t, r, http.StatusBadRequest)
	ps, _ := r.errDetails(t)["problems"].([]any)
	if len(ps) != len(want) {
		t.Errorf("API details.problems has %d, want %d: %s", len(ps), len(want), r.body)
	}
}

// JSON that does not parse: one problem, its line and column in the fields.
func TestImportProblemsSyntax(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t)
	got := ops.DecodeProblems([]byte("{\n  \"name\": \"x\",\n  \"nodes\": [}\n"), srv.cfg.Limits)
	if len(got) != 1 || got[0].Line != 3 || got[0].Column != 13 || strings.Contains(got[0].Message, "line") {
		t.Fatalf("got %+v", got)
	}
	// a document that decodes has none
	if got := ops.DecodeProblems([]byte(fmt.Sprintf(linearDoc, "ok")), srv.cfg.Limits); got != nil {
		t.Errorf("a good document has problems: %+v", got)
	}
	// an A2E message: the decoder's problem, located
	got = ops.DecodeProblems([]byte(`{"type":"chain/req","chain_id":"x",
"nodes":[{"node_id":"a","kind":"tool","retry":7}]}`), srv.cfg.Limits)
	if len(got) != 1 || got[0].Line == 0 {
		t.Errorf("A2E: %+v", got)
	}
}

// The field check and the Validation panel say where an expression is wrong
// the same way: line and column, 1-based.
func TestExprErrorPlaceSameInFieldAndPanel(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	src := "length(input.items"
	_, field := pageDo(t, ts.URL, "POST", "/fragments/expr", "application/x-www-form-urlencoded", form("src", src))
	if !strings.Contains(field, "line 1, column 19") {
		t.Errorf("field check: %s", field)
	}
	id := createChain(t, ts, `{"name":"pos","nodes":[{"node_id":"b","kind":"branch","condition":"length(input.items"}]}`)
	ch, err := srv.DB.GetChain(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"base_version": ch.Version, "doc": ch.Doc})
	_, panel := pageDo(t, ts.URL, "POST", "/chains/"+id+"/save", "application/json", string(body))
	if !strings.Contains(panel, "line 1, column 19") || strings.Contains(panel, "position") {
		t.Errorf("validation panel: %s", panel)
	}
	r := do(t, ts, "POST", "/v1/validate", `{"name":"pos","nodes":[{"node_id":"b","kind":"branch","condition":"length(input.items"}]}`)
	is := r.json(t)["issues"].([]any)
	found := false
	for _, x := range is {
		m := x.(map[string]any)
		if m["rule"] == "expression_syntax" {
			found = m["line"] == 1.0 && m["column"] == 19.0
		}
	}
	if !found {
		t.Errorf("API issue has no line 1 / column 19: %s", r.body)
	}
}
