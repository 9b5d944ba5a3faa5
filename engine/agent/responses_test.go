package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// model.api: responses sends the agent's turns to OpenAI's Responses API:
// a function call, then the turn that carries its output.
func TestAgentOverTheResponsesAPI(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req map[string]any
		_ = json.Unmarshal(b, &req)
		mu.Lock()
		bodies = append(bodies, req)
		n := len(bodies)
		mu.Unlock()
		if r.URL.Path != "/v1/responses" {
			http.Error(w, "not found "+r.URL.Path, http.StatusNotFound)
			return
		}
		out := `[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"echo","arguments":"{\"message\":\"hi\"}","status":"completed"}]`
		if n > 1 {
			out = `[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"echo said hi","annotations":[]}]}]`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","created_at":0,"status":"completed","model":"m-2026","output":%s,"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}`, n, out)
	}))
	defer srv.Close()
	doc := "name: r\nmodel: {url: '" + srv.URL + "/v1', name: m, api: responses, stream: false}\nsystem_prompt: Be brief.\ntools:\n  - tool: echo\n"
	s := mustSet(t, "", doc)
	def, _ := s.Get("r")
	rt := &Runtime{Set: s, Registry: testRegistry()}
	var ev events
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "say hi"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if out["answer"] != "echo said hi" {
		t.Fatalf("out %v", out)
	}
	if len(bodies) != 2 || bodies[0]["instructions"] != "Be brief." || bodies[0]["store"] != false {
		t.Fatalf("requests %v", bodies)
	}
	input := bodies[1]["input"].([]any)
	last := input[len(input)-1].(map[string]any)
	if last["type"] != "function_call_output" || last["call_id"] != "call_1" || !strings.Contains(fmt.Sprint(last["output"]), `"message":"hi"`) {
		t.Fatalf("the second request's input %v", input)
	}
	if u := ev.steps("model_usage"); len(u) != 2 || u[0]["input_tokens"] != int64(5) {
		t.Fatalf("usage %v", u)
	}
	// api is an openai setting.
	if _, err := parseSet(t, "", "name: x\nmodel: {provider: anthropic, name: c, api: responses}\n"); err == nil || !strings.Contains(err.Error(), "model.api \"responses\" is an openai API") {
		t.Fatalf("err %v", err)
	}
}
