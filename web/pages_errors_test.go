package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The page forms answer a refusal through the error table, as the API
// does: its status, and its message in the form's error fragment. A chain
// with errors is refused by the run door, nothing run.
func TestPageFormErrorsAnswerTheTablesStatus(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"broken-form","nodes":[{"node_id":"a","kind":"tool","name":"no_such_tool_here"}]}`)
	form := "application/x-www-form-urlencoded"
	res, html := pageDo(t, ts.URL, "POST", "/chains/"+id+"/run", form, url.Values{"input": {"{}"}}.Encode())
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(html, "fix them before running") ||
		!strings.Contains(html, "no_such_tool_here") || !strings.Contains(html, `class="form-error"`) || res.Header.Get("HX-Redirect") != "" {
		t.Fatalf("run of a chain with errors: %d %s", res.StatusCode, html)
	}
	if n := len(do(t, ts, "GET", "/v1/runs?chain="+id, nil).json(t)["runs"].([]any)); n != 0 {
		t.Fatalf("%d runs of a chain with errors", n)
	}
	res, html = pageDo(t, ts.URL, "POST", "/chains/"+id+"/run", form, url.Values{"input": {"[1"}}.Encode())
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(html, "The input is not a JSON object") {
		t.Fatalf("run with input that is not JSON: %d %s", res.StatusCode, html)
	}
	res, html = pageDo(t, ts.URL, "POST", "/runs/no-such-run/resume", form, url.Values{"decision": {"approve"}, "comment": {strings.Repeat("x", 2001)}}.Encode())
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(html, "Could not resume") || !strings.Contains(html, "over the limit of 2000") {
		t.Fatalf("an answer with a comment over the limit: %d %s", res.StatusCode, html)
	}
	res, html = pageDo(t, ts.URL, "POST", "/chains/"+id+"/versions/x/restore", form, "")
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(html, "Cannot restore") {
		t.Fatalf("restore of a version that is no number: %d %s", res.StatusCode, html)
	}
}
