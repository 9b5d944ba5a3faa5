package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlite"
	"github.com/chainstudio/studio/web/ops"
)

// storedAgentServer is newAgentServer with its store at hand.
func storedAgentServer(t *testing.T) (*agent.Set, store.Backend, *httptest.Server) {
	t.Helper()
	reg := testRegistry()
	set, err := agent.LoadDir(exampleAgents(), agent.LoadOptions{Tools: func(n string) bool { _, ok := reg.Get(n); return ok }, Providers: testProviders})
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
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	ts := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(ts.Close)
	return set, db, ts
}

const notesAgent = `name: notes
description: Writes the query down.
tool: transform
input:
  expression: "{noted: query}"
`

// An agent stored through the API runs at once, no restart: listed as
// stored, run by name, edited from the version it was read at, linked to
// by another stored agent's chain, and deleted (by an admin).
func TestStoredAgentLifecycle(t *testing.T) {
	t.Parallel()
	_, _, ts := storedAgentServer(t)
	r := do(t, ts, "POST", "/v1/agents", map[string]any{"name": "notes", "source": notesAgent, "message": "first"})
	wantStatus(t, r, http.StatusCreated)
	if got := r.json(t); got["version"] != float64(1) || got["source"] != notesAgent {
		t.Fatalf("created: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/agents", nil)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"name":"notes"`) || !strings.Contains(string(r.body), `"source":"store","version":1`) ||
		!strings.Contains(string(r.body), `"source":"file","file":"`) {
		t.Fatalf("list: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/agents/notes/run", map[string]any{"query": "buy milk"})
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `buy milk`) {
		t.Fatalf("run: %s", r.body)
	}

	// An edit names the version it started from; a stale one changes nothing.
	v2 := strings.Replace(notesAgent, "{noted: query}", "{noted: query, twice: `true`}", 1)
	r = do(t, ts, "PUT", "/v1/agents/notes", map[string]any{"source": v2, "base_version": 1, "message": "twice"})
	wantStatus(t, r, http.StatusOK)
	if r.json(t)["version"] != float64(2) {
		t.Fatalf("put: %s", r.body)
	}
	r = do(t, ts, "PUT", "/v1/agents/notes", map[string]any{"source": notesAgent, "base_version": 1})
	wantStatus(t, r, http.StatusConflict)
	if !strings.Contains(string(r.body), "version_conflict") {
		t.Fatalf("stale put: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/agents/notes/versions", nil)
	wantStatus(t, r, http.StatusOK)
	if vs := r.json(t)["versions"].([]any); len(vs) != 2 || vs[1].(map[string]any)["message"] != "first" {
		t.Fatalf("versions: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/agents/notes/run", map[string]any{"query": "x"})
	if !strings.Contains(string(r.body), `twice`) {
		t.Fatalf("the run used the old version: %s", r.body)
	}

	// A stored agent's chain links to another agent, stored or from a file.
	chained := "name: router\ntool: transform\ninput: {expression: query}\nspec:\n  chain:\n    on_complete:\n      - agent: notes\n      - agent: crm-logger\n"
	wantStatus(t, do(t, ts, "POST", "/v1/agents", map[string]any{"name": "router", "source": chained}), http.StatusCreated)
	r = do(t, ts, "GET", "/v1/agents/router/chain", nil)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"agent":"notes"`) || !strings.Contains(string(r.body), `"agent":"crm-logger"`) {
		t.Fatalf("router's chain: %s", r.body)
	}
	// Deleting an agent another one links to is refused while the link
	// stands? No: it is deleted, and the linking agent is listed as not
	// loaded, saying why, until it is fixed.
	wantStatus(t, do(t, ts, "DELETE", "/v1/agents/notes", nil), http.StatusNoContent)
	r = do(t, ts, "GET", "/v1/agents", nil)
	if strings.Contains(string(r.body), `"name":"notes"`) || !strings.Contains(string(r.body), `"not_loaded":[{"error":`) || !strings.Contains(string(r.body), `spec.chain.on_complete[0] names agent`) {
		t.Fatalf("after deleting notes: %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/agents/notes/run", map[string]any{"query": "x"}), http.StatusNotFound)
	// A file agent is not deleted through the API.
	r = do(t, ts, "DELETE", "/v1/agents/crm-logger", nil)
	wantStatus(t, r, http.StatusConflict)
	if !strings.Contains(string(r.body), "remove the file") {
		t.Fatalf("delete a file agent: %s", r.body)
	}
}

// What cannot be stored is refused naming what is wrong, and nothing is
// written.
func TestStoredAgentRefusals(t *testing.T) {
	t.Parallel()
	_, db, ts := storedAgentServer(t)
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		want   string
	}{
		{"no source or node", map[string]any{"name": "x"}, http.StatusBadRequest, "source"},
		{"both", map[string]any{"name": "x", "source": notesAgent, "node": map[string]any{"node_id": "a", "kind": "agent"}}, http.StatusBadRequest, "one of them"},
		{"bad yaml", map[string]any{"name": "x", "source": "name: x\nmodel: [\n"}, http.StatusUnprocessableEntity, "line 2"},
		{"unknown field", map[string]any{"name": "x", "source": "name: x\ntool: echo\ntemprature: 1\n"}, http.StatusUnprocessableEntity, "temprature"},
		{"another name", map[string]any{"name": "x", "source": notesAgent}, http.StatusUnprocessableEntity, `named "notes", but it is stored as "x"`},
		{"unknown link", map[string]any{"name": "y", "source": "name: y\ntool: echo\nspec: {chain: {on_complete: [{agent: ghost}]}}\n"}, http.StatusUnprocessableEntity, `names agent "ghost", which does not exist`},
		{"unknown tool", map[string]any{"name": "z", "source": "name: z\ntool: teleport\n"}, http.StatusUnprocessableEntity, `tool "teleport" does not exist`},
		{"node without an agent", map[string]any{"name": "n", "node": map[string]any{"node_id": "a", "kind": "agent", "config": map[string]any{}}}, http.StatusUnprocessableEntity, "config.model"},
		{"node with a bad agent", map[string]any{"name": "n", "node": map[string]any{"node_id": "a", "kind": "agent", "config": map[string]any{"model": map[string]any{"name": "m"}, "max_steps": -1}}}, http.StatusUnprocessableEntity, "max_steps"},
	} {
		r := do(t, ts, "POST", "/v1/agents", c.body)
		msg, _ := r.json(t)["error"].(map[string]any)["message"].(string)
		if r.status != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, r.status, r.body, c.status, c.want)
		}
	}
	if list, err := db.ListAgents(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("stored after refusals: %v, %v", list, err)
	}
	wantStatus(t, do(t, ts, "PUT", "/v1/agents/notes", map[string]any{"source": notesAgent}), http.StatusBadRequest)
}

// An agent defined in a node is saved as a reusable agent: its settings
// become an agent file that runs under the new name.
func TestSaveNodeAgentAsStored(t *testing.T) {
	t.Parallel()
	set, _, ts := storedAgentServer(t)
	node := map[string]any{"node_id": "classify", "kind": "agent", "config": map[string]any{
		"model":         map[string]any{"name": "m", "url": "http://127.0.0.1:9/v1", "temperature": 0.2},
		"system_prompt": "You sort tickets.",
		"prompt":        "{{ query }}",
		"output_schema": map[string]any{"type": "object", "properties": map[string]any{"team": map[string]any{"type": "string"}}},
		"max_steps":     3,
	}}
	r := do(t, ts, "POST", "/v1/agents", map[string]any{"name": "ticket-sorter", "description": "Sorts tickets.", "node": node})
	wantStatus(t, r, http.StatusCreated)
	src, _ := r.json(t)["source"].(string)
	if !strings.HasPrefix(src, "name: ticket-sorter\ndescription: Sorts tickets.\n") || !strings.Contains(src, "spec:\n    output_schema:") {
		t.Fatalf("source:\n%s", src)
	}
	d, ok := set.Get("ticket-sorter")
	if !ok || !d.Stored || d.SystemPrompt != "You sort tickets." || d.Model.Temperature == nil || *d.Model.Temperature != 0.2 || d.Schema() == nil {
		t.Fatalf("the set's agent: %+v", d)
	}
}

// Another process's change (or `studio agents`) reaches this one at its
// poll; a stored agent whose source no longer reads is left out, saying why.
func TestLoadStoredAgentsFromTheStore(t *testing.T) {
	t.Parallel()
	set, db, ts := storedAgentServer(t)
	ctx := context.Background()
	if _, err := db.SaveAgent(ctx, &store.Agent{Name: "notes", Source: notesAgent}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveAgent(ctx, &store.Agent{Name: "broken", Source: "name: broken\ntool: echo\nmystery: 1\n"}, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Get("notes"); ok {
		t.Fatal("notes ran before any reload")
	}
	if err := ops.LoadStoredAgents(ctx, db, set); err != nil {
		t.Fatal(err)
	}
	if d, ok := set.Get("notes"); !ok || !d.Stored || d.Version != 1 {
		t.Fatalf("notes after reload: %+v", d)
	}
	r := do(t, ts, "GET", "/v1/agents", nil)
	if !strings.Contains(string(r.body), `"name":"broken"`) || !strings.Contains(string(r.body), "mystery") {
		t.Fatalf("broken is not listed as not loaded: %s", r.body)
	}
}

// The Agents pages store agents as a person would: New agent (refused with
// what was typed kept, then created), Edit from the version read, Import a
// file agent into the store, Delete.
func TestStoredAgentPages(t *testing.T) {
	t.Parallel()
	set, db, ts := storedAgentServer(t)
	origin := []string{"Origin", ts.URL}
	// A form that stores answers 303 to the agent's page: follow it.
	pageForm := func(t *testing.T, ts *httptest.Server, path string, form url.Values, headers ...string) (int, string) {
		t.Helper()
		res, body := pageDo(t, ts.URL, "POST", path, "application/x-www-form-urlencoded", form.Encode(), headers...)
		if res.StatusCode != http.StatusSeeOther {
			return res.StatusCode, body
		}
		res, body = pageDo(t, ts.URL, "GET", res.Header.Get("Location"), "", "")
		return res.StatusCode, body
	}
	code, body := pageForm(t, ts, "/agents/new", url.Values{"source": {"name: notes\ntool: teleport\n"}}, origin...)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "tool &#34;teleport&#34; does not exist") || !strings.Contains(body, "tool: teleport") {
		t.Fatalf("refused form: %d\n%s", code, body)
	}
	code, body = pageForm(t, ts, "/agents/new", url.Values{"source": {notesAgent}, "message": {"first"}}, origin...)
	if code != http.StatusOK || !strings.Contains(body, "Agent notes") || !strings.Contains(body, "stored, version 1") {
		t.Fatalf("created: %d\n%s", code, body)
	}
	res, edit := pageDo(t, ts.URL, "GET", "/agents/notes/edit", "", "")
	if res.StatusCode != http.StatusOK || !strings.Contains(edit, `name="base_version" value="1"`) || !strings.Contains(edit, "Save version 2") {
		t.Fatalf("edit form: %d\n%s", res.StatusCode, edit)
	}
	v2 := strings.Replace(notesAgent, "Writes the query down.", "Writes it down.", 1)
	code, body = pageForm(t, ts, "/agents/notes/edit", url.Values{"source": {v2}, "base_version": {"1"}}, origin...)
	if code != http.StatusOK || !strings.Contains(body, "stored, version 2") || !strings.Contains(body, "Writes it down.") || !strings.Contains(body, `id="agent-versions"`) || !strings.Contains(body, "<td>first</td>") {
		t.Fatalf("edited: %d\n%s", code, body)
	}
	code, body = pageForm(t, ts, "/agents/notes/edit", url.Values{"source": {notesAgent}, "base_version": {"1"}}, origin...)
	if code != http.StatusConflict || !strings.Contains(body, "reload this page") {
		t.Fatalf("stale edit: %d\n%s", code, body)
	}
	code, body = pageForm(t, ts, "/agents/crm-logger/import", url.Values{}, origin...)
	if code != http.StatusOK || !strings.Contains(body, "stored, version 1") {
		t.Fatalf("import: %d\n%s", code, body)
	}
	if d, ok := set.Get("crm-logger"); !ok || !d.Stored {
		t.Fatalf("crm-logger after import: %+v", d)
	}
	if a, err := db.GetAgent(context.Background(), "crm-logger"); err != nil || !strings.Contains(a.Message, "imported from") {
		t.Fatalf("stored crm-logger: %+v, %v", a, err)
	}
	code, body = pageForm(t, ts, "/agents/notes/delete", url.Values{}, origin...)
	if code != http.StatusOK || strings.Contains(body, `href="/agents/notes"`) {
		t.Fatalf("delete: %d\n%s", code, body)
	}
}
