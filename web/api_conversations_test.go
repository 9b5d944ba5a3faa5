package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/runs"
)

// An agent node with memory, run twice for one user through the API:
// the second model call carries the first exchange; the conversation is
// listed and read by any role, and cleared by an editor only.
func TestConversationsAPI(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t, llmtest.Turn{Text: "Hello Ada."}, llmtest.Turn{Text: "You said hello."}, llmtest.Turn{Text: "Hi team."})
	set, err := agent.NewSet(nil, agent.LoadOptions{Providers: testProviders})
	if err != nil {
		t.Fatal(err)
	}
	srv, ts := newTestServerOpts(t, Config{}, testRegistry(), func(o *runs.Options) { o.Agents = set })
	h := roleTokens(t, srv)
	doc := fmt.Sprintf(`{"name":"memo","nodes":[{"node_id":"ask","kind":"agent","config":{
		"model":{"url":%q,"name":"m","stream":false},"prompt":"{{ input.text }}",
		"memory":{"session_key":"input.user","max_messages":10}}}]}`, f.URL+"/v1")
	r := do(t, ts, "POST", "/v1/chains", doc, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	for _, in := range [][2]string{{"ada", "hello"}, {"ada", "what did I say?"}, {"team/ada b", "hi"}} {
		r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"user":"`+in[0]+`","text":"`+in[1]+`"}}`, h["editor"]...)
		wantStatus(t, r, http.StatusAccepted)
		waitStatus(t, ts, r.json(t)["run_id"].(string), "completed", h["viewer"])
	}
	reqs := f.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls", len(reqs))
	}
	msgs := reqs[1]["messages"].([]any)
	var sent []string
	for _, m := range msgs {
		sent = append(sent, fmt.Sprint(m.(map[string]any)["content"]))
	}
	if got := strings.Join(sent, " | "); got != "hello | Hello Ada. | what did I say?" {
		t.Fatalf("the second call sent %q", got)
	}
	if n := len(reqs[2]["messages"].([]any)); n != 1 {
		t.Fatalf("another user's call sent %d messages", n)
	}

	r = do(t, ts, "GET", "/v1/conversations", nil, h["viewer"]...)
	wantStatus(t, r, http.StatusOK)
	list := r.json(t)["conversations"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["session"] != "team/ada b" {
		t.Fatalf("conversations, newest first: %s", r.body)
	}
	c := list[1].(map[string]any)
	if c["scope"] != "memo:ask" || c["session"] != "ada" || c["turns"] != 4.0 || c["last_at"] == nil {
		t.Fatalf("conversation %v", c)
	}
	r = do(t, ts, "GET", "/v1/conversations?scope=other", nil, h["viewer"]...)
	if n := len(r.json(t)["conversations"].([]any)); n != 0 {
		t.Fatalf("another scope lists %d", n)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/conversations?limit=0", nil, h["viewer"]...), http.StatusBadRequest)
	r = do(t, ts, "GET", "/v1/conversations/memo:ask/"+url.PathEscape("team/ada b"), nil, h["viewer"]...)
	wantStatus(t, r, http.StatusOK)
	if m := r.json(t); m["session"] != "team/ada b" || m["total"] != 2.0 {
		t.Fatalf("a session with a slash: %s", r.body)
	}

	path := "/v1/conversations/" + url.PathEscape("memo:ask") + "/ada"
	r = do(t, ts, "GET", path, nil, h["approver"]...)
	wantStatus(t, r, http.StatusOK)
	turns := r.json(t)["turns"].([]any)
	if len(turns) != 4 || turns[0].(map[string]any)["role"] != "user" || turns[3].(map[string]any)["text"] != "You said hello." {
		t.Fatalf("turns %s", r.body)
	}
	r = do(t, ts, "GET", path+"?limit=2", nil, h["viewer"]...)
	if m := r.json(t); len(m["turns"].([]any)) != 2 || m["total"] != 4.0 {
		t.Fatalf("limit 2: %s", r.body)
	}

	for _, role := range []string{"viewer", "approver"} {
		if r := do(t, ts, "DELETE", path, nil, h[role]...); r.status != http.StatusForbidden {
			t.Fatalf("%s clears: %d %s", role, r.status, r.body)
		}
	}
	wantStatus(t, do(t, ts, "DELETE", path, nil, h["editor"]...), http.StatusNoContent)
	wantStatus(t, do(t, ts, "GET", path, nil, h["viewer"]...), http.StatusNotFound)
	wantStatus(t, do(t, ts, "DELETE", path, nil, h["admin"]...), http.StatusNotFound)
}
