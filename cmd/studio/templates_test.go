//go:build linux

package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Every template against a real `studio serve`: it is listed, a chain made
// from it validates (the LLM one once its credential exists) and passes its
// own tests, and it runs end to end against fakes on loopback: the URL
// check fired by its webhook notifies a fake chat webhook; the LLM triage's
// agent asks a fake OpenAI server (its key checked), pauses for the refund's
// approval and finishes when it is approved; the map runs its code step on
// every order.
//
//	go test ./cmd/studio -run TestTemplatesRunInTheStudio -v
func TestTemplatesRunInTheStudio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the studio binary")
	}
	var mu sync.Mutex
	var notified []map[string]any
	var modelAuth []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/health":
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "down for maintenance")
		case "/chat-hook":
			var m map[string]any
			json.Unmarshal(body, &m)
			mu.Lock()
			notified = append(notified, m)
			mu.Unlock()
			io.WriteString(w, "ok")
		case "/v1/chat/completions":
			mu.Lock()
			modelAuth = append(modelAuth, r.Header.Get("Authorization"))
			mu.Unlock()
			var req struct {
				Model    string           `json:"model"`
				Messages []map[string]any `json:"messages"`
			}
			// the system prompt, then the message with the answer's schema
			if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 2 || req.Model != "gpt-4o-mini" || !strings.Contains(fmt.Sprint(req.Messages[1]["content"]), `"refund"`) {
				http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
				return
			}
			message, _, _ := strings.Cut(fmt.Sprint(req.Messages[1]["content"]), "\n")
			content, _ := json.Marshal(map[string]any{"category": "refund", "summary": "Charged twice for " + message})
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": string(content)}, "finish_reason": "stop"}},
				"usage":   map[string]any{"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer fake.Close()

	bin := builtStudio(t)
	p := startStudio(t, bin, filepath.Join(t.TempDir(), "studio.db"), "--http-allow-private", "--model-allow-private")
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}()

	code, m := p.do(t, "GET", "/v1/templates", nil)
	if code != 200 {
		t.Fatalf("list: %d %v", code, m)
	}
	ids := map[string]bool{}
	for _, x := range m["templates"].([]any) {
		ids[x.(map[string]any)["id"].(string)] = true
	}
	for _, id := range []string{"llm-triage", "webhook-notify", "map-code"} {
		if !ids[id] {
			t.Fatalf("template %s not listed: %v", id, m)
		}
	}
	if code, m := p.do(t, "POST", "/v1/templates/nope/chains", map[string]any{}); code != 404 {
		t.Fatalf("an unknown template: %d %v", code, m)
	}
	// The LLM triage names an OpenAI key: it validates once it exists (sent
	// to OpenAI, and to the loopback fake the test points it at).
	if code, m := p.do(t, "POST", "/v1/credentials", map[string]any{"name": "openai-api", "type": "openai", "fields": map[string]any{"api_key": "sk-template-test"}, "hosts": []string{"api.openai.com", "127.0.0.1"}}); code != 201 {
		t.Fatalf("credential: %d %v", code, m)
	}

	chains := map[string]map[string]any{}
	for id := range ids {
		code, ch := p.do(t, "POST", "/v1/templates/"+id+"/chains", map[string]any{})
		if code != 201 {
			t.Fatalf("%s: %d %v", id, code, ch)
		}
		for _, is := range ch["issues"].([]any) {
			if is.(map[string]any)["severity"] == "error" {
				t.Errorf("%s: a validation error: %v", id, is)
			}
		}
		code, rep := p.do(t, "POST", "/v1/chains/"+ch["id"].(string)+"/tests/run", map[string]any{})
		if code != 200 || rep["failed"] != 0.0 || rep["total"].(float64) < 2 {
			t.Errorf("%s: its tests: %d %v", id, code, rep)
		}
		chains[id] = ch
	}
	// A second chain from the same template gets a free name.
	if code, ch := p.do(t, "POST", "/v1/templates/map-code/chains", map[string]any{}); code != 201 || ch["name"] != chains["map-code"]["name"].(string)+" (2)" {
		t.Fatalf("a second chain: %d %v", code, ch["name"])
	}

	// edit changes a chain as the designer would, and publishes it.
	edit := func(t *testing.T, ch map[string]any, change func(nodes []any)) {
		t.Helper()
		doc := ch["doc"].(map[string]any)
		change(doc["nodes"].([]any))
		id := ch["id"].(string)
		if code, m := p.do(t, "PUT", "/v1/chains/"+id, doc, "If-Match", fmt.Sprintf(`"v%d"`, int(ch["version"].(float64)))); code != 200 {
			t.Fatalf("put: %d %v", code, m)
		}
		if code, m := p.do(t, "POST", "/v1/chains/"+id+"/publish", map[string]any{"message": "pointed at the fakes"}); code != 200 {
			t.Fatalf("publish: %d %v", code, m)
		}
	}
	node := func(nodes []any, id string) map[string]any {
		for _, n := range nodes {
			if n.(map[string]any)["node_id"] == id {
				return n.(map[string]any)
			}
		}
		t.Fatalf("no node %s", id)
		return nil
	}

	t.Run("map with a code step", func(t *testing.T) {
		ch := chains["map-code"]
		code, m := p.do(t, "POST", "/v1/chains/"+ch["id"].(string)+"/runs", map[string]any{"input": ch["doc"].(map[string]any)["sample_input"]})
		if code != 202 {
			t.Fatalf("start: %d %v", code, m)
		}
		run := p.waitStatus(t, m["run_id"].(string), "completed", "failed")
		if got := toJSON(run["final_output"]); got != `{"big":["A-1","A-3"],"orders":3,"total":497.5}` {
			t.Fatalf("%v: %s %v", run["status"], got, run["error"])
		}
	})

	t.Run("a webhook checks a URL and notifies", func(t *testing.T) {
		ch := chains["webhook-notify"]
		edit(t, ch, func(nodes []any) {
			node(nodes, "notify")["input"].(map[string]any)["url"] = fake.URL + "/chat-hook"
		})
		code, hook := p.do(t, "POST", "/v1/chains/"+ch["id"].(string)+"/hooks", map[string]any{})
		if code != 201 {
			t.Fatalf("hook: %d %v", code, hook)
		}
		body := fmt.Sprintf(`{"url":%q}`, fake.URL+"/health")
		at := time.Now().Unix()
		mac := hmac.New(sha256.New, []byte(hook["secret"].(string)))
		fmt.Fprintf(mac, "%d.%s", at, body)
		req, _ := http.NewRequest("POST", p.url+hook["path"].(string), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Studio-Signature", fmt.Sprintf("t=%d,v1=%s", at, hex.EncodeToString(mac.Sum(nil))))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var fired map[string]any
		json.NewDecoder(res.Body).Decode(&fired)
		res.Body.Close()
		if res.StatusCode != 202 {
			t.Fatalf("fire: %d %v", res.StatusCode, fired)
		}
		run := p.waitStatus(t, fired["run_id"].(string), "completed", "failed")
		if run["status"] != "completed" {
			t.Fatalf("%v", run["error"])
		}
		mu.Lock()
		defer mu.Unlock()
		if len(notified) != 1 || notified[0]["text"] != fake.URL+"/health answered 503" {
			t.Fatalf("the chat webhook got %v", notified)
		}
	})

	t.Run("an LLM triages, a person approves the refund", func(t *testing.T) {
		ch := chains["llm-triage"]
		edit(t, ch, func(nodes []any) {
			model := node(nodes, "classify")["config"].(map[string]any)["model"].(map[string]any)
			model["url"], model["stream"] = fake.URL+"/v1", false
		})
		code, m := p.do(t, "POST", "/v1/chains/"+ch["id"].(string)+"/runs", map[string]any{"input": map[string]any{"message": "order 1234"}})
		if code != 202 {
			t.Fatalf("start: %d %v", code, m)
		}
		runID := m["run_id"].(string)
		run := p.waitStatus(t, runID, "paused", "failed", "completed")
		if run["status"] != "paused" {
			t.Fatalf("%v: %v", run["status"], run["error"])
		}
		mu.Lock()
		auth := append([]string(nil), modelAuth...)
		mu.Unlock()
		if len(auth) != 1 || auth[0] != "Bearer sk-template-test" {
			t.Fatalf("the model was asked with %v", auth)
		}
		if code, m := p.do(t, "POST", "/v1/runs/"+runID+"/resume", map[string]any{"action": "approve"}); code != 200 {
			t.Fatalf("approve: %d %v", code, m)
		}
		run = p.waitStatus(t, runID, "completed", "failed")
		if got := toJSON(run["final_output"]); !strings.Contains(got, `"queue":"refunds"`) || !strings.Contains(got, "Charged twice for order 1234") {
			t.Fatalf("%v: %s %v", run["status"], got, run["error"])
		}
	})
}
