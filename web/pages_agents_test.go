package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestAgentsPages(t *testing.T) {
	t.Parallel()
	_, ts := newAgentServer(t, exampleAgents())
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Accept", "text/html")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, err := res.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return res.StatusCode, b.String()
	}
	code, body := get("/agents")
	if code != 200 || !strings.Contains(body, `href="/agents/sales-qualifier"`) || !strings.Contains(body, "crm-logger") {
		t.Fatalf("list: %d\n%s", code, body)
	}
	code, body = get("/agents/sales-qualifier")
	for _, want := range []string{"__chain__sales-qualifier", "email-composer", "{{ output.data.score &gt; 7 }}", `data-doc="`, "Run agent"} {
		if !strings.Contains(body, want) {
			t.Errorf("agent page lacks %q", want)
		}
	}
	if code != 200 {
		t.Fatalf("agent page: %d", code)
	}
	// A model agent's page lists its tools, and says which need a person.
	code, body = get("/agents/greeting-assistant")
	for _, want := range []string{`id="agent-tools"`, "<code>greet</code>", "chain <code>linear</code>", "a person approves each call", "tool <code>echo</code>", "At most 4 model turns and 4 tool calls"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("greeting-assistant's page lacks %q", want)
		}
	}
	if code, _ := get("/agents/nobody"); code != http.StatusNotFound {
		t.Errorf("unknown agent: %d, want 404", code)
	}

	post := func(form url.Values) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/agents/sales-qualifier/run", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", ts.URL)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := post(url.Values{"query": {"Ana at ACME"}, "context": {`{"budget": 60000, "timeline_days": 14}`}})
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/runs/") {
		t.Fatalf("run: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	// The run page draws an agent's run from its own document: no saved
	// version holds the compiled chain, so GET /v1/runs/{id} carries it.
	code, body = get("/v1" + res.Header.Get("Location"))
	if code != 200 || !strings.Contains(body, `"status":"completed"`) || !strings.Contains(body, `"doc":{"name":"__chain__sales-qualifier"`) {
		t.Errorf("the agent run lacks the compiled chain or status: %d %.400s", code, body)
	}
	if res := post(url.Values{"query": {"x"}, "context": {"[1,2"}}); res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("bad context: %d, want 422", res.StatusCode)
	}
	if res := post(url.Values{"query": {"  "}}); res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("empty query: %d, want 422", res.StatusCode)
	}
}
