package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

func patchTestChain(t *testing.T, srv *Server) *store.Chain {
	t.Helper()
	ch, err := srv.DB.CreateChain(context.Background(), &chain.Chain{Name: "pt", Nodes: []chain.Node{
		{ID: "a", Kind: chain.KindTool, Name: "echo", Label: "A"},
		{ID: "b", Kind: chain.KindTool, Name: "echo", Label: "B"},
	}, Edges: []chain.Edge{{ID: "a->b", Source: "a", Target: "b"}}}, "", true)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// The editor's autosave with a patch writes an autosave version holding the
// patched document, validates it, and keeps lost-update protection.
func TestPageSavePatch(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ch := patchTestChain(t, srv)
	ctx := context.Background()
	save := func(body string) (*http.Response, string) {
		return pageDo(t, ts.URL, "POST", "/chains/"+ch.ID+"/save", "application/json", body)
	}
	res, html := save(`{"base_version": 1, "patch": {"nodes": [{"node_id": "b", "kind": "tool", "name": "echo", "label": "B2"}, {"node_id": "c", "kind": "tool", "name": "echo"}], "expect": {"nodes": 3, "edges": 1}}}`)
	if res.Header.Get("X-Save-State") != "saved" || res.Header.Get("X-Chain-Version") != "2" {
		t.Fatalf("patch save: %v %s", res.Header, html)
	}
	if !strings.Contains(res.Header.Get("Server-Timing"), "validate;dur=") {
		t.Errorf("Server-Timing: %q", res.Header.Get("Server-Timing"))
	}
	// the new node c is unreachable: validation ran on the patched chain
	if res.Header.Get("X-Issue-Errors") == "0" || !strings.Contains(html, `data-node-id="c"`) {
		t.Errorf("node c should be reported: %s", html)
	}
	cur, err := srv.DB.GetChain(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(cur.Doc.Nodes) != 3 || cur.Doc.Nodes[1].Label != "B2" || cur.Doc.Nodes[2].ID != "c" || len(cur.Doc.Edges) != 1 {
		t.Errorf("stored document: %+v", cur.Doc)
	}
	vs, err := srv.DB.ListVersions(ctx, ch.ID)
	if err != nil || len(vs) != 2 || vs[0].Kind != store.VersionAutosave {
		t.Errorf("versions: %+v %v", vs, err)
	}
	// a patch against an old version is a conflict, nothing written
	res, _ = save(`{"base_version": 1, "patch": {"remove_nodes": ["c"]}}`)
	if res.Header.Get("X-Save-State") != "conflict" || res.Header.Get("X-Chain-Version") != "2" {
		t.Errorf("stale patch: %v", res.Header)
	}
	// a patch that does not fit the saved chain is refused, naming why
	res, html = save(`{"base_version": 2, "patch": {"remove_nodes": ["zz"]}}`)
	if res.Header.Get("X-Save-State") != "patch_refused" || !strings.Contains(html, `remove_nodes[0]: no node &#34;zz&#34;`) {
		t.Errorf("refused patch: %v %s", res.Header, html)
	}
	res, html = save(`{"base_version": 2, "patch": {"nodes": [{"node_id": "b", "kind": "tool"}], "expect": {"nodes": 2, "edges": 1}}}`)
	if res.Header.Get("X-Save-State") != "patch_refused" || !strings.Contains(html, "made against another document") {
		t.Errorf("mismatched patch: %v %s", res.Header, html)
	}
	// both doc and patch, or neither, is not a save
	res, _ = save(`{"base_version": 2}`)
	if res.Header.Get("X-Save-State") != "invalid" {
		t.Errorf("no doc or patch: %v", res.Header)
	}
	// a rename by patch still meets the name rules
	res, _ = save(`{"base_version": 2, "patch": {"chain": {"name": "__chain__x"}}}`)
	if res.Header.Get("X-Save-State") != "invalid" {
		t.Errorf("reserved name by patch: %v", res.Header)
	}
	if cur, _ := srv.DB.GetChain(ctx, ch.ID); cur.Version != 2 {
		t.Errorf("version %d after refused saves, want 2", cur.Version)
	}
}

// PATCH /v1/chains/{id} applies a patch under If-Match.
func TestAPIPatchChain(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ch := patchTestChain(t, srv)
	path := "/v1/chains/" + ch.ID
	body := `{"nodes": [{"node_id": "a", "kind": "tool", "name": "echo", "label": "A2"}]}`

	r := do(t, ts, "PATCH", path, body)
	wantStatus(t, r, http.StatusPreconditionRequired)
	r = do(t, ts, "PATCH", "/v1/chains/nope", body, "If-Match", `"v1"`)
	wantStatus(t, r, http.StatusNotFound)

	r = do(t, ts, "PATCH", path+"?message=relabel", body, "If-Match", `"v1"`)
	wantStatus(t, r, http.StatusOK)
	if r.header.Get("ETag") != `"v2"` {
		t.Errorf("ETag %q", r.header.Get("ETag"))
	}
	got := r.json(t)
	if got["version"].(float64) != 2 || got["valid"] != true {
		t.Errorf("answer: %s", r.body)
	}
	cur, _ := srv.DB.GetChain(context.Background(), ch.ID)
	if cur.Doc.Nodes[0].Label != "A2" || cur.Doc.Nodes[1].Label != "B" {
		t.Errorf("stored: %+v", cur.Doc.Nodes)
	}

	// lost update: the same patch on v1 again is a conflict
	r = do(t, ts, "PATCH", path, body, "If-Match", `"v1"`)
	wantStatus(t, r, http.StatusConflict)
	if r.errCode(t) != "version_conflict" {
		t.Errorf("code %q", r.errCode(t))
	}
	// a bad patch names the place
	r = do(t, ts, "PATCH", path, `{"edges": [{"source": "b", "target": "a"}]}`, "If-Match", `"v2"`)
	wantStatus(t, r, http.StatusBadRequest)
	if d := r.errDetails(t); d["path"] != "edges[0].id" {
		t.Errorf("details %v: %s", d, r.body)
	}
}
