package web

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestListTools: GET /v1/tools lists every tool with its description and
// input schema, marks built-ins this studio lacks, and lists the agents with
// the input schema derived from their definition.
func TestListTools(t *testing.T) {
	dir := t.TempDir()
	def := "name: writer\ndescription: Writes a reply.\ntool: echo\ninput:\n  session_id: fixed\n"
	if err := os.WriteFile(filepath.Join(dir, "writer.agent.yaml"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, ts := newAgentServer(t, dir)
	srv.Registry.Register("custom", nil)
	srv.Registry.SetDescription("custom", "A host tool.")
	srv.Registry.SetInputSchema("custom", map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}})

	r := do(t, ts, "GET", "/v1/tools", nil)
	body := r.body
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, body)
	}
	var got struct {
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Enabled     bool           `json:"enabled"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
		Agents []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"agents"`
		Total int `json:"total"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for i, tl := range got.Tools {
		by[tl.Name] = i
	}
	if got.Total != len(got.Tools) {
		t.Errorf("total %d, %d tools", got.Total, len(got.Tools))
	}
	delay := got.Tools[by["delay"]]
	ms, _ := delay.InputSchema["properties"].(map[string]any)["ms"].(map[string]any)
	if !delay.Enabled || delay.Description == "" || ms["type"] != "number" || ms["description"] == nil || ms["maximum"] != 3600000.0 {
		t.Errorf("delay = %+v", delay)
	}
	httpT := got.Tools[by["http"]]
	method, _ := httpT.InputSchema["properties"].(map[string]any)["method"].(map[string]any)
	if method["default"] != "GET" || len(method["enum"].([]any)) < 5 {
		t.Errorf("http method schema = %v", method)
	}
	custom := got.Tools[by["custom"]]
	if !custom.Enabled || custom.Description != "A host tool." || custom.InputSchema["properties"] == nil {
		t.Errorf("custom = %+v", custom)
	}
	if len(got.Agents) != 1 || got.Agents[0].Name != "writer" || got.Agents[0].Description != "Writes a reply." {
		t.Fatalf("agents = %+v", got.Agents)
	}
	props := got.Agents[0].InputSchema["properties"].(map[string]any)
	if _, ok := props["query"]; !ok {
		t.Errorf("agent input schema lacks query: %v", props)
	}
	if _, ok := props["session_id"]; ok {
		t.Errorf("session_id is fixed by the agent's static input, yet offered: %v", props)
	}
}

// TestListToolsNotEnabled: a built-in tool the registry lacks is listed as
// not enabled.
func TestListToolsNotEnabled(t *testing.T) {
	_, ts := newTestServer(t)
	r := do(t, ts, "GET", "/v1/tools", nil)
	var got struct {
		Tools []struct {
			Name    string `json:"name"`
			Enabled bool   `json:"enabled"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	for _, tl := range got.Tools {
		if !tl.Enabled {
			t.Fatalf("%s listed as not enabled, though testRegistry has every built-in", tl.Name)
		}
	}
	if len(got.Tools) != 11 {
		t.Errorf("%d tools, want the 11 built-ins", len(got.Tools))
	}
}
