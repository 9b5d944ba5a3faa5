package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
)

// pageDo sends one request to a page route as a browser would (same origin);
// headers are name, value pairs added to it.
func pageDo(t *testing.T, base, method, path, contentType, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "text/html")
	if method != http.MethodGet {
		req.Header.Set("Origin", base)
	}
	for k := 0; k+1 < len(headers); k += 2 {
		req.Header.Set(headers[k], headers[k+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestPageExprFragment(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	_, ok := pageDo(t, ts.URL, "POST", "/fragments/expr", "application/x-www-form-urlencoded", "src="+url.QueryEscape("length(output.items) > `0`"))
	if !strings.Contains(ok, "✓ JMESPath") {
		t.Errorf("valid expression: %s", ok)
	}
	res, bad := pageDo(t, ts.URL, "POST", "/fragments/expr", "application/x-www-form-urlencoded", "src="+url.QueryEscape("{{ output.x > }}"))
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if !strings.Contains(bad, `class="caret"`) || !strings.Contains(bad, "column") || !strings.Contains(bad, "^") {
		t.Errorf("syntax error should show a caret and the column: %s", bad)
	}
	// hostile source is escaped in the caret line
	_, h := pageDo(t, ts.URL, "POST", "/fragments/expr", "application/x-www-form-urlencoded", "src="+url.QueryEscape("<script>alert(1)</script> =="))
	if strings.Contains(h, "<script>") {
		t.Errorf("expression source not escaped: %s", h)
	}
}

func TestPagePropsPerKind(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	want := map[chain.Kind][]string{
		chain.KindTool:      {`data-f="name"`, `value="echo"`, `data-f="input_map"`},
		chain.KindSkill:     {`data-f="name"`},
		chain.KindProc:      {`data-f="config" data-t="form"`, `&#34;argv&#34;`},
		chain.KindBranch:    {`data-f="condition"`, `hx-post="/fragments/expr"`},
		chain.KindCondition: {`data-f="cases"`, `data-t="cases"`},
		chain.KindMap:       {`data-f="items_path"`, `data-f="map_node"`},
		chain.KindParallel:  {`data-f="branches"`, `data-t="list"`},
		chain.KindInterrupt: {`data-f="config" data-t="form"`, `&#34;on_timeout&#34;`},
		chain.KindAgent:     {`data-f="config" data-t="form"`, `id="agent-select"`},
	}
	for kind, fields := range want {
		body, _ := json.Marshal(map[string]any{"node": map[string]any{"node_id": "n1", "kind": kind, "label": "<b>hi</b>"}, "node_ids": []string{"n1", "n2"}})
		res, html := pageDo(t, ts.URL, "POST", "/fragments/props", "application/json", string(body))
		if res.StatusCode != 200 {
			t.Fatalf("%s: status %d", kind, res.StatusCode)
		}
		for _, f := range append(fields, `data-f="on_error"`, `data-f="retry.max_attempts"`, `data-f="routing"`, `data-f="set_state"`) {
			if !strings.Contains(html, f) {
				t.Errorf("%s panel lacks %s", kind, f)
			}
		}
		if strings.Contains(html, "<b>hi</b>") {
			t.Errorf("%s panel: label not escaped", kind)
		}
	}
	body := `{"edge": {"id": "a->b", "source": "a", "target": "b", "condition": "x >"}, "node_ids": ["a", "b"], "source_kind": "branch", "handles": ["true", "false"]}`
	_, html := pageDo(t, ts.URL, "POST", "/fragments/props", "application/json", body)
	for _, f := range []string{`data-f="source"`, `data-f="target"`, `data-f="label"`, `data-f="condition"`, `data-f="default"`, `data-f="max_iterations"`, `data-f="on_max_reached"`, `class="caret"`} {
		if !strings.Contains(html, f) {
			t.Errorf("edge panel lacks %s", f)
		}
	}
}

func TestPageChainListEscapesHostileNames(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	hostile := `<script>alert("x")</script>`
	_, err := srv.DB.CreateChain(context.Background(), &chain.Chain{Name: hostile, Description: "<img src=x onerror=alert(1)>",
		Nodes: []chain.Node{{ID: "a", Kind: chain.KindTool, Name: "echo", Label: "<svg onload=alert(2)>"}}}, "", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/fragments/chains?q=script"} {
		res, html := pageDo(t, ts.URL, "GET", path, "", "")
		if res.StatusCode != 200 {
			t.Fatalf("%s: status %d", path, res.StatusCode)
		}
		if strings.Contains(html, hostile) || strings.Contains(html, "<img src=x") {
			t.Errorf("%s: hostile name rendered as markup", path)
		}
		if !strings.Contains(html, "&lt;script&gt;") {
			t.Errorf("%s: escaped name missing", path)
		}
	}
	rows, _, _ := srv.DB.ListChains(context.Background(), storeFilterAll())
	res, html := pageDo(t, ts.URL, "GET", "/chains/"+rows[0].ID, "", "")
	if res.StatusCode != 200 || strings.Contains(html, "<svg onload") || strings.Contains(html, hostile) {
		t.Errorf("editor page: status %d, hostile markup present: %v", res.StatusCode, strings.Contains(html, "<svg onload"))
	}
}

func TestPageSaveValidatesAndDetectsConflicts(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ch, err := srv.DB.CreateChain(context.Background(), &chain.Chain{Name: "c", Nodes: []chain.Node{{ID: "a", Kind: chain.KindTool, Name: "echo"}}}, "", true)
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"name": "c", "nodes": [{"node_id": "a", "kind": "tool", "name": "echo"}, {"node_id": "b", "kind": "tool", "name": "echo"}]}`
	res, html := pageDo(t, ts.URL, "POST", "/chains/"+ch.ID+"/save", "application/json", `{"base_version": 1, "doc": `+doc+`}`)
	if res.Header.Get("X-Save-State") != "saved" || res.Header.Get("X-Chain-Version") != "2" {
		t.Fatalf("save: %v %s", res.Header, html)
	}
	if res.Header.Get("X-Issue-Errors") == "0" || !strings.Contains(html, `data-node-id="b"`) || !strings.Contains(html, "unreachable") {
		t.Errorf("unconnected node b should be reported: %s", html)
	}
	res, _ = pageDo(t, ts.URL, "POST", "/chains/"+ch.ID+"/save", "application/json", `{"base_version": 1, "doc": `+doc+`}`)
	if res.Header.Get("X-Save-State") != "conflict" || res.Header.Get("X-Chain-Version") != "2" {
		t.Errorf("stale base should conflict: %v", res.Header)
	}
	res, html = pageDo(t, ts.URL, "POST", "/chains/"+ch.ID+"/save", "application/json", `{"base_version": 2, "doc": {"name": "c", "nodes": [{"node_id": "a", "kind": "nope"}]}}`)
	if res.Header.Get("X-Save-State") != "invalid" || !strings.Contains(html, "nodes[0]") {
		t.Errorf("undecodable document: %v %s", res.Header, html)
	}
	if cur, _ := srv.DB.GetChain(context.Background(), ch.ID); cur.Version != 2 {
		t.Errorf("version %d after a conflict and an invalid save, want 2", cur.Version)
	}
}

func TestPageRunFlow(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ch, err := srv.DB.CreateChain(context.Background(), &chain.Chain{Name: "r", Nodes: []chain.Node{{ID: "a", Kind: chain.KindTool, Name: "echo"}}}, "", true)
	if err != nil {
		t.Fatal(err)
	}
	res, html := pageDo(t, ts.URL, "POST", "/chains/"+ch.ID+"/run", "application/x-www-form-urlencoded", "input="+url.QueryEscape(`[1`))
	if res.Header.Get("HX-Redirect") != "" || !strings.Contains(html, "not a JSON object") {
		t.Errorf("bad input should be refused: %s", html)
	}
	res, _ = pageDo(t, ts.URL, "POST", "/chains/"+ch.ID+"/run", "application/x-www-form-urlencoded", "input="+url.QueryEscape(`{"x": "<b>"}`))
	target := res.Header.Get("HX-Redirect")
	if !strings.HasPrefix(target, "/runs/") {
		t.Fatalf("run should redirect to the run page, got %q", target)
	}
	runID := strings.TrimPrefix(target, "/runs/")
	waitIdle(t, srv, runID)
	res, html = pageDo(t, ts.URL, "GET", target, "", "")
	if res.StatusCode != 200 || !strings.Contains(html, `data-status="completed"`) || !strings.Contains(html, `class="ev ph-done"`) {
		t.Errorf("run page: %d %s", res.StatusCode, html)
	}
	_, drawer := pageDo(t, ts.URL, "GET", target+"/nodes/a", "", "")
	if !strings.Contains(drawer, "&lt;b&gt;") || strings.Contains(drawer, `"<b>"`) || !strings.Contains(drawer, "Re-run from here") {
		t.Errorf("drawer: %s", drawer)
	}
	// a node the run's chain does not have is a 404 naming it, not an empty drawer
	if res, body := pageDo(t, ts.URL, "GET", target+"/nodes/%3Cnope%3E", "", ""); res.StatusCode != 404 || !strings.Contains(body, `node &#34;&lt;nope&gt;&#34; of this run&#39;s chain not found`) {
		t.Errorf("drawer of an unknown node: %d %s", res.StatusCode, body)
	}
	res, _ = pageDo(t, ts.URL, "POST", target+"/rerun", "application/x-www-form-urlencoded", "node=a")
	if r := res.Header.Get("HX-Redirect"); !strings.HasPrefix(r, "/runs/") || r == target {
		t.Errorf("re-run should open a new run, got %q", r)
	}
	res, _ = pageDo(t, ts.URL, "GET", "/chains/"+ch.ID+"/runs", "", "")
	if res.StatusCode != 200 {
		t.Errorf("runs page: %d", res.StatusCode)
	}
	res, _ = pageDo(t, ts.URL, "GET", "/chains/"+ch.ID+"/versions?v=1", "", "")
	if res.StatusCode != 200 {
		t.Errorf("versions page: %d", res.StatusCode)
	}
}

func TestPageResumeFailedRunWithStatePatch(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	doc := &chain.Chain{Name: "f", Nodes: []chain.Node{
		{ID: "a", Kind: chain.KindTool, Name: "fail", Input: map[string]any{"message": "boom", "until_attempt": 2}},
	}}
	ch, err := srv.DB.CreateChain(context.Background(), doc, "", true)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := pageDo(t, ts.URL, "POST", "/chains/"+ch.ID+"/run", "application/x-www-form-urlencoded", "input={}")
	target := res.Header.Get("HX-Redirect")
	runID := strings.TrimPrefix(target, "/runs/")
	waitIdle(t, srv, runID)
	_, html := pageDo(t, ts.URL, "GET", target+"/controls", "", "")
	if !strings.Contains(html, `id="btn-resume"`) || !strings.Contains(html, "boom") {
		t.Fatalf("a failed run offers Resume with its error: %s", html)
	}
	_, html = pageDo(t, ts.URL, "POST", target+"/resume", "application/x-www-form-urlencoded", "decision=retry&modified_state="+url.QueryEscape("[1]"))
	if !strings.Contains(html, "not a JSON object") {
		t.Errorf("a bad state patch is refused: %s", html)
	}
	res, html = pageDo(t, ts.URL, "POST", target+"/resume", "application/x-www-form-urlencoded", "decision=retry&modified_state="+url.QueryEscape(`{"fixed": true}`))
	if res.Header.Get("HX-Redirect") != target {
		t.Fatalf("resume: %v %s", res.Header, html)
	}
	waitIdle(t, srv, runID)
	events, err := srv.Runs.Events(context.Background(), runID, 0, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	starts := 0
	for _, e := range events {
		if e.NodeID == "a" && e.Phase == engine.PhaseStart {
			starts++
		}
	}
	if starts < 2 {
		t.Errorf("the failed node should run again after the resume: %d starts", starts)
	}
}

func TestPageStaticAssetsAreCached(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	for _, p := range []string{views.Asset("js/editor.js"), "/static/js/editor.js?v=" + assetHash} {
		res, body := pageDo(t, ts.URL, "GET", p, "", "")
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Cache-Control"), "immutable") || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") || len(body) == 0 {
			t.Errorf("asset %s: %d %v", p, res.StatusCode, res.Header)
		}
	}
	if res, _ := pageDo(t, ts.URL, "GET", "/static/v/0123456789ab/js/editor.js", "", ""); res.StatusCode != 200 || strings.Contains(res.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("asset at another version: %d %v (served, not cached for a year)", res.StatusCode, res.Header)
	}
	if res, _ := pageDo(t, ts.URL, "GET", "/static/v/"+assetHash+"/../../web/pages.go", "", ""); res.StatusCode != 404 {
		t.Errorf("versioned path outside static/: %d", res.StatusCode)
	}
	if res, _ := pageDo(t, ts.URL, "GET", "/static/../web/pages.go", "", ""); res.StatusCode != 404 {
		t.Errorf("path outside static/: %d", res.StatusCode)
	}
	if res, _ := pageDo(t, ts.URL, "GET", "/static/embed.go", "", ""); res.StatusCode != 404 {
		t.Errorf("Go source served: %d", res.StatusCode)
	}
}

func storeFilterAll() store.ChainFilter { return store.ChainFilter{Limit: 10} }
