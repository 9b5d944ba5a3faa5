package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store/sqlite"
)

// newAgentServer starts a studio with the agents in dir (and the agent routes).
func newAgentServer(t *testing.T, dir string) (*Server, *httptest.Server) {
	t.Helper()
	reg := testRegistry()
	set, err := agent.LoadDir(dir, agent.LoadOptions{Tools: func(n string) bool { _, ok := reg.Get(n); return ok }, Providers: testProviders})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := New(Config{Logger: testLogger()}, testDeps(t, db, reg, func(o *runs.Options) { o.Agents = set }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	ts := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(ts.Close)
	return srv, ts
}

func exampleAgents() string { return filepath.Join("..", "examples", "agents") }

func TestAgentList(t *testing.T) {
	t.Parallel()
	_, ts := newAgentServer(t, exampleAgents())
	r := do(t, ts, "GET", "/v1/agents", nil)
	wantStatus(t, r, http.StatusOK)
	var out struct {
		Agents []map[string]any `json:"agents"`
		Total  int              `json:"total"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || out.Total != 5 {
		t.Fatalf("%v %s", err, r.body)
	}
	q := out.Agents[4]
	if q["name"] != "sales-qualifier" || q["has_chain"] != true || q["mode"] != "sequential" || q["kind"] != "tool" || q["tool"] != "transform" ||
		q["max_depth"] != float64(3) || q["links"] != float64(3) || q["description"] == "" {
		t.Fatalf("sales-qualifier: %v", q)
	}
	if out.Agents[0]["has_chain"] != false || out.Agents[0]["mode"] != nil {
		t.Fatalf("crm-logger: %v", out.Agents[0])
	}
	r = do(t, ts, "GET", "/v1/agents/sales-qualifier", nil)
	wantStatus(t, r, http.StatusOK)
	if def := r.json(t)["definition"].(map[string]any); def["spec"].(map[string]any)["chain"] == nil {
		t.Fatalf("definition: %s", r.body)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/agents/nobody", nil), http.StatusNotFound)

	// No agents folder: an empty list.
	_, ts2 := newAgentServer(t, filepath.Join(t.TempDir(), "missing"))
	r = do(t, ts2, "GET", "/v1/agents", nil)
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != `{"agents":[],"not_loaded":[],"total":0}`+"\n" {
		t.Fatalf("%s", r.body)
	}
}

func TestAgentChainGraph(t *testing.T) {
	t.Parallel()
	_, ts := newAgentServer(t, exampleAgents())
	r := do(t, ts, "GET", "/v1/agents/sales-qualifier/chain", nil)
	wantStatus(t, r, http.StatusOK)
	var g agent.Graph
	if err := json.Unmarshal(r.body, &g); err != nil {
		t.Fatal(err)
	}
	if g.Agent != "sales-qualifier" || g.Mode != "sequential" || g.MaxDepth != 3 || len(g.Links) != 3 {
		t.Fatalf("graph: %s", r.body)
	}
	if l := g.Links[0]; l.Agent != "email-composer" || l.Depth != 1 || l.Via != nil || l.When == nil || *l.When != "{{ output.data.score > 7 }}" || l.Default {
		t.Fatalf("link 0: %+v", l)
	}
	if l := g.Links[2]; l.Agent != "human-triage" || !l.Default || l.When != nil {
		t.Fatalf("link 2: %+v", l)
	}
	if !strings.Contains(string(r.body), `"via":null`) || !strings.Contains(string(r.body), `"when":null`) {
		t.Fatalf("via and when are null when absent: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/agents/crm-logger/chain", nil)
	wantStatus(t, r, http.StatusNotFound)
	if r.errCode(t) != "no_chain" {
		t.Fatalf("%s", r.body)
	}
	r = do(t, ts, "GET", "/v1/agents/ghost/chain", nil)
	wantStatus(t, r, http.StatusNotFound)
	if r.errCode(t) != "agent_not_found" {
		t.Fatalf("%s", r.body)
	}
}

func TestAgentRunIsAStudioRun(t *testing.T) {
	t.Parallel()
	_, ts := newAgentServer(t, exampleAgents())
	r := do(t, ts, "POST", "/v1/agents/sales-qualifier/run", map[string]any{
		"query": "Ana at ACME", "session_id": "s-1", "context": map[string]any{"budget": 75000, "timeline_days": 10}})
	wantStatus(t, r, http.StatusOK)
	var out struct {
		RunID     string             `json:"run_id"`
		Answer    string             `json:"answer"`
		Data      map[string]any     `json:"data"`
		DataError *string            `json:"data_error"`
		Steps     []any              `json:"steps"`
		Trace     map[string]any     `json:"trace"`
		Chain     *agent.ChainReport `json:"chain"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	if out.Answer != `{"score":9,"urgent":true}` || out.Data["score"] != float64(9) || out.DataError != nil || out.Steps == nil || out.Trace["run_id"] != out.RunID {
		t.Fatalf("response: %s", r.body)
	}
	c := out.Chain
	if c == nil || c.RunID != out.RunID || c.Status != "completed" || c.Mode != "sequential" || len(c.Links) != 3 {
		t.Fatalf("chain: %s", r.body)
	}
	if l := c.Links[0]; l.Agent != "email-composer" || l.Status != "success" || l.Answer == nil || !strings.HasPrefix(*l.Answer, "Hi Ana at ACME") || l.DurationMS == nil {
		t.Fatalf("email: %+v", l)
	}
	if l := c.Links[2]; l.Agent != "human-triage" || l.Status != "skipped" || l.Reason != "condition_false" {
		t.Fatalf("triage: %+v", l)
	}
	// It is in the run history, with its events.
	run := waitRun(t, ts, out.RunID)
	if run["kind"] != "agent" || run["chain_name"] != "__chain__sales-qualifier" || run["status"] != "completed" {
		t.Fatalf("run: %v", run)
	}
	ev := do(t, ts, "GET", "/v1/runs/"+out.RunID+"/events", nil, "Accept", "application/json")
	if ev.status != http.StatusOK || !strings.Contains(string(ev.body), "email-composer") {
		t.Fatalf("events: %d %.300s", ev.status, ev.body)
	}
}

func TestAgentRunWithModel(t *testing.T) {
	t.Parallel()
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		content := "Lead qualified 8/10 -- budget confirmed.\n```json\n{\"score\": 8, \"urgent\": true}\n```"
		if req.Model == "broken" {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("model exploded"))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": content}}}})
	}))
	defer llm.Close()
	dir := t.TempDir()
	files := map[string]string{
		"qualifier.agent.yaml": "name: qualifier\nmodel: {url: '" + llm.URL + "/v1', name: q}\nspec:\n  output_schema:\n    score: {type: integer}\n  chain:\n    on_complete:\n      - {agent: mailer, when: '{{ output.data.score > 7 }}'}\n      - {agent: broken, on_error: continue}\n",
		"mailer.agent.yaml":    "name: mailer\nmodel: {url: '" + llm.URL + "/v1', name: m}\n",
		"broken.agent.yaml":    "name: broken\nmodel: {url: '" + llm.URL + "/v1', name: broken}\n",
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, ts := newAgentServer(t, dir)
	r := do(t, ts, "POST", "/v1/agents/qualifier/run", map[string]any{"query": "ACME"})
	wantStatus(t, r, http.StatusOK)
	m := r.json(t)
	doc := m["chain"].(map[string]any)
	links := doc["links"].([]any)
	if m["data"].(map[string]any)["score"] != float64(8) || doc["status"] != "partial" ||
		links[0].(map[string]any)["status"] != "success" || links[1].(map[string]any)["status"] != "error" ||
		!strings.Contains(links[1].(map[string]any)["error"].(string), "500 Internal Server Error: model exploded") {
		t.Fatalf("response: %s", r.body)
	}
	// An agent without a chain: chain is null, no data keys without a schema.
	r = do(t, ts, "POST", "/v1/agents/mailer/run", map[string]any{"query": "x"})
	wantStatus(t, r, http.StatusOK)
	m = r.json(t)
	if _, has := m["data"]; has || m["chain"] != nil || !strings.HasPrefix(m["answer"].(string), "Lead qualified") {
		t.Fatalf("single: %s", r.body)
	}
	run := waitRun(t, ts, m["run_id"].(string))
	if run["kind"] != "agent" || run["chain_name"] != "__agent__mailer" {
		t.Fatalf("run: %v", run)
	}
	// The root failing: still 200, with the error and chain status failed.
	r = do(t, ts, "POST", "/v1/agents/broken/run", map[string]any{"query": "x"})
	wantStatus(t, r, http.StatusOK)
	if m = r.json(t); m["answer"] != nil || !strings.Contains(fmt.Sprint(m["error"]), "model exploded") || m["status"] != "failed" {
		t.Fatalf("broken: %s", r.body)
	}
}

func TestAgentRunErrors(t *testing.T) {
	t.Parallel()
	_, ts := newAgentServer(t, exampleAgents())
	r := do(t, ts, "POST", "/v1/agents/ghost/run", map[string]any{"query": "x"})
	wantStatus(t, r, http.StatusNotFound)
	r = do(t, ts, "POST", "/v1/agents/sales-qualifier/run", map[string]any{"session_id": "x"})
	wantStatus(t, r, http.StatusBadRequest)
	if r.errCode(t) != "missing_query" {
		t.Fatalf("%s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/agents/sales-qualifier/run", `{"query":"x","contxt":{}}`), http.StatusBadRequest)
	wantStatus(t, do(t, ts, "POST", "/v1/agents/sales-qualifier/run", `{"query":"x","context":[1]}`), http.StatusBadRequest)
}

// A skill node may call an agent's compiled chain by its reserved name, and a
// chain: agent runs a saved chain.
func TestAgentChainsResolve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "saved.agent.yaml"), []byte("name: saved\nchain: linear-x\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "a.agent.yaml"), []byte("name: a\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: saved}]\n"), 0o644)
	srv, ts := newAgentServer(t, dir)
	createChain(t, ts, `{"name":"linear-x","nodes":[{"node_id":"a","kind":"tool","name":"echo","input_map":{"q":"input.query"}}]}`)
	r := do(t, ts, "POST", "/v1/agents/a/run", map[string]any{"query": "hello"})
	wantStatus(t, r, http.StatusOK)
	link := r.json(t)["chain"].(map[string]any)["links"].([]any)[0].(map[string]any)
	if link["status"] != "success" || link["answer"] != `{"q":"{\"context\":{},\"query\":\"hello\",\"session_id\":\"\"}"}` {
		t.Fatalf("chain agent: %s", r.body)
	}
	res, err := service(srv).Engine().Run(context.Background(), enginetest.PlanOf(service(srv).Engine(), &chain.Chain{Name: "caller", Nodes: []chain.Node{{ID: "call", Kind: chain.KindSkill, Name: "__chain__a"}}}),
		map[string]any{"query": "q", "session_id": "", "context": map[string]any{}}, engine.RunOptions{})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("skill __chain__a: %v %+v", err, res.Error)
	}
}
