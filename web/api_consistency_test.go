package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/api"
)

// Restore and delete honour If-Match: a stale tag changes nothing (412 with
// the current ETag), the current one goes ahead; without the header they
// act as before.
func TestIfMatchOnRestoreAndDelete(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "guarded"))
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, fmt.Sprintf(linearDoc, "guarded v2"), "If-Match", `"v1"`), 200)

	r := do(t, ts, "POST", "/v1/chains/"+id+"/versions/1/restore", nil, "If-Match", `"v1"`)
	wantStatus(t, r, http.StatusPreconditionFailed)
	if r.errCode(t) != "precondition_failed" || r.errDetails(t)["current_version"] != 2.0 || r.header.Get("ETag") != `"v2"` {
		t.Fatalf("stale restore: %s %v", r.body, r.header)
	}
	if v := do(t, ts, "GET", "/v1/chains/"+id, nil).json(t)["version"]; v != 2.0 {
		t.Fatalf("a refused restore wrote version %v", v)
	}
	r = do(t, ts, "DELETE", "/v1/chains/"+id, nil, "If-Match", `"v1"`)
	wantStatus(t, r, http.StatusPreconditionFailed)
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id, nil), 200)
	wantStatus(t, do(t, ts, "DELETE", "/v1/chains/"+id, nil, "If-Match", "v1x"), 400)

	r = do(t, ts, "POST", "/v1/chains/"+id+"/versions/1/restore", nil, "If-Match", `"v2"`)
	wantStatus(t, r, 200)
	if m := r.json(t); m["version"] != 3.0 || m["name"] != "guarded" || r.header.Get("ETag") != `"v3"` {
		t.Fatalf("restore on the current tag: %s", r.body)
	}
	wantStatus(t, do(t, ts, "DELETE", "/v1/chains/"+id, nil, "If-Match", `"v3"`), http.StatusNoContent)
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id, nil), 404)

	other := createChain(t, ts, fmt.Sprintf(linearDoc, "unguarded"))
	wantStatus(t, do(t, ts, "DELETE", "/v1/chains/"+other, nil), http.StatusNoContent)
}

// The version list and a version answer If-None-Match with 304: the list
// is tagged by its newest version, a version by itself.
func TestIfNoneMatchOnVersions(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "cached"))
	r := do(t, ts, "GET", "/v1/chains/"+id+"/versions", nil)
	wantStatus(t, r, 200)
	if r.header.Get("ETag") != `"v1"` {
		t.Fatalf("versions ETag %q", r.header.Get("ETag"))
	}
	r = do(t, ts, "GET", "/v1/chains/"+id+"/versions", nil, "If-None-Match", `"v1"`)
	wantStatus(t, r, http.StatusNotModified)
	if len(r.body) != 0 {
		t.Fatalf("304 with a body: %s", r.body)
	}
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, fmt.Sprintf(linearDoc, "cached, edited"), "If-Match", `"v1"`), 200)
	r = do(t, ts, "GET", "/v1/chains/"+id+"/versions", nil, "If-None-Match", `"v1"`)
	wantStatus(t, r, 200)
	if n := len(r.json(t)["versions"].([]any)); n != 2 || r.header.Get("ETag") != `"v2"` {
		t.Fatalf("after an edit: %d versions, ETag %q", n, r.header.Get("ETag"))
	}
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id+"/versions/1", nil, "If-None-Match", `"v1"`), http.StatusNotModified)
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+id+"/versions/1", nil, "If-None-Match", `"v2"`), 200)
}

// A body that says it is not JSON is 415 on every API write, naming what
// it got; JSON (with a charset, or a +json type) and a body without a
// Content-Type are read as before.
func TestAPIRefusesNonJSONBodies(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	doc := fmt.Sprintf(linearDoc, "typed")
	for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x", "not a type"} {
		r := doRaw(t, ts, "POST", "/v1/chains", doc, ct)
		wantStatus(t, r, http.StatusUnsupportedMediaType)
		if r.errCode(t) != "unsupported_media_type" || r.errDetails(t)["content_type"] != ct {
			t.Fatalf("%s: %s", ct, r.body)
		}
	}
	id := createChain(t, ts, doc)
	wantStatus(t, doRaw(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`, "text/plain"), http.StatusUnsupportedMediaType)
	wantStatus(t, doRaw(t, ts, "PUT", "/v1/chains/"+id+"?version=1", doc, "text/plain"), http.StatusUnsupportedMediaType)
	if v := do(t, ts, "GET", "/v1/chains/"+id, nil).json(t)["version"]; v != 1.0 {
		t.Fatalf("a refused PUT saved version %v", v)
	}
	wantStatus(t, doRaw(t, ts, "POST", "/v1/validate", doc, "application/json; charset=utf-8"), 200)
	wantStatus(t, doRaw(t, ts, "POST", "/v1/validate", doc, "application/vnd.chain+json"), 200)
	wantStatus(t, doRaw(t, ts, "POST", "/v1/validate", doc, ""), 200)
}

// Every chain answer carries issues and valid, GET included.
func TestChainAnswersCarryIssues(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	bad := `{"name":"broken","nodes":[{"node_id":"a","kind":"tool","name":"no_such_tool"}]}`
	r := do(t, ts, "POST", "/v1/chains", bad)
	wantStatus(t, r, 201)
	id := r.json(t)["id"].(string)
	for _, path := range []string{"/v1/chains/" + id} {
		m := do(t, ts, "GET", path, nil).json(t)
		issues, ok := m["issues"].([]any)
		if !ok || len(issues) == 0 || m["valid"] != false {
			t.Fatalf("GET %s: issues %v valid %v", path, m["issues"], m["valid"])
		}
	}
	good := createChain(t, ts, fmt.Sprintf(linearDoc, "fine"))
	m := do(t, ts, "GET", "/v1/chains/"+good, nil).json(t)
	if issues, ok := m["issues"].([]any); !ok || len(issues) != 0 || m["valid"] != true {
		t.Fatalf("valid chain: issues %v valid %v", m["issues"], m["valid"])
	}
}

// doRaw sends body with exactly the Content-Type given ("" for none).
func doRaw(t testing.TB, ts *httptest.Server, method, path, body, ct string) resp {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// Chains and runs page the same way: follow next_url (always present, null
// on the last page) or pass next as ?cursor=. A chain list cursor is the
// last row's place, so deleting a chain already seen moves nothing.
func TestCursorPagingChainsAndRuns(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	names := []string{"delta", "Alpha", "charlie", "bravo", "echo"}
	ids := map[string]string{}
	for _, n := range names {
		ids[n] = createChain(t, ts, fmt.Sprintf(linearDoc, n))
	}
	var seen []string
	next := "/v1/chains?limit=2"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		m := do(t, ts, "GET", next, nil).json(t)
		if want := map[bool]float64{true: 5, false: 4}[pages == 0]; m["total"] != want {
			t.Fatalf("total %v", m["total"])
		}
		for _, c := range m["chains"].([]any) {
			seen = append(seen, c.(map[string]any)["name"].(string))
		}
		if len(seen) == 2 { // delete one already listed: the next page is unchanged
			wantStatus(t, do(t, ts, "DELETE", "/v1/chains/"+ids["Alpha"], nil), 204)
		}
		next, _ = m["next_url"].(string)
		if (next == "") != (m["next"] == "") {
			t.Fatalf("next %q but next_url %v", m["next"], m["next_url"])
		}
	}
	if got := strings.Join(seen, ","); got != "Alpha,bravo,charlie,delta,echo" {
		t.Fatalf("pages gave %s", got)
	}
	m := do(t, ts, "GET", "/v1/chains?limit=5&q=a", nil).json(t)
	if m["next_url"] != nil || len(m["chains"].([]any)) != 3 {
		t.Fatalf("last page: %v", m)
	}
	for _, q := range []string{"cursor=nope", "cursor=" + api.EncodeChainCursor(store.ChainKey{Name: "x", ID: "y"}) + "&offset=1"} {
		r := do(t, ts, "GET", "/v1/chains?"+q, nil)
		wantStatus(t, r, 400)
		if r.errCode(t) != "bad_parameter" {
			t.Fatalf("%s: %s", q, r.body)
		}
	}

	for i := 0; i < 3; i++ {
		startAndWait(t, ts, ids["bravo"], `{"x":1}`)
	}
	first := do(t, ts, "GET", "/v1/runs?limit=2", nil).json(t)
	nextURL, _ := first["next_url"].(string)
	if !strings.Contains(nextURL, "cursor=") || first["prev_url"] != nil {
		t.Fatalf("first runs page: next_url %v prev_url %v", first["next_url"], first["prev_url"])
	}
	second := do(t, ts, "GET", nextURL, nil).json(t)
	if len(second["runs"].([]any)) != 1 || second["next_url"] != nil || second["prev_url"] == nil {
		t.Fatalf("second runs page: %v", second)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/runs?cursor=bad", nil), 400)
}

// Every timestamp the API gives has one precision, the microsecond: a run's
// own times (read from a database column) and its node results and events
// (read from checkpoints) alike.
func TestTimestampsHaveOnePrecision(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "clock"))
	run := startAndWait(t, ts, id, `{"x":1}`)
	stamp := regexp.MustCompile(`"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)"`)
	for _, path := range []string{"/v1/runs/" + run, "/v1/runs/" + run + "/events", "/v1/chains/" + id, "/v1/runs?chain=" + id} {
		body := do(t, ts, "GET", path, nil).body
		all := stamp.FindAllStringSubmatch(string(body), -1)
		if len(all) == 0 {
			t.Fatalf("%s: no timestamps in %s", path, body)
		}
		for _, m := range all {
			if len(m[2]) > 7 { // a dot and more than 6 digits
				t.Errorf("%s: %s is finer than a microsecond", path, m[1])
			}
		}
	}
}
