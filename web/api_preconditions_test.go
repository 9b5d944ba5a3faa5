package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, fmt.Sprintf(linearDoc, "cached"), "If-Match", `"v1"`), 200)
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
