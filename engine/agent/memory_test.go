package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/engine/tool"
)

// memStore is an in-memory Conversations, idempotent by key as a real
// store is.
type memStore struct {
	mu       sync.Mutex
	sessions map[string][]Turn // by scope + "\x00" + session
	keys     map[string]bool
	appends  []string // the keys of the appends that added turns
	seq      int
}

func newMemStore() *memStore {
	return &memStore{sessions: map[string][]Turn{}, keys: map[string]bool{}}
}

func (m *memStore) Load(_ context.Context, scope, session string, limit int) (History, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := m.sessions[scope+"\x00"+session]
	from := max(len(all)-limit, 0)
	return History{Turns: append([]Turn(nil), all[from:]...), Total: len(all)}, nil
}

func (m *memStore) Append(_ context.Context, scope, session, key string, turns []Turn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := scope + "\x00" + session + "\x00" + key
	if m.keys[k] {
		return nil
	}
	m.keys[k] = true
	m.appends = append(m.appends, key)
	for _, t := range turns {
		m.seq++
		t.ID = fmt.Sprint(m.seq)
		m.sessions[scope+"\x00"+session] = append(m.sessions[scope+"\x00"+session], t)
	}
	return nil
}

func (m *memStore) turns(scope, session string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, t := range m.sessions[scope+"\x00"+session] {
		out = append(out, t.Role+":"+t.Text)
	}
	return out
}

// sent is what a chat-completions request carried: role:content, in order.
func sent(t *testing.T, req map[string]any) string {
	t.Helper()
	var out []string
	for _, m := range at(t, req, "messages").([]any) {
		content, _ := m.(map[string]any)["content"] // none beside tool calls
		out = append(out, fmt.Sprint(at(t, m, "role"))+":"+fmt.Sprint(content))
	}
	return strings.Join(out, " | ")
}

const memoryAgent = `name: helper
model: {url: "%URL%", name: m, stream: false}
prompt: "{{ query }}"
memory: {session_key: context.user, max_messages: 4}
`

// run makes one node execution of the agent for user, named run id.
func askAs(t *testing.T, rt *Runtime, def *Definition, runID, user, query string) map[string]any {
	t.Helper()
	ctx := tool.WithExecution(context.Background(), tool.Execution{RunID: runID, Chain: "c", NodeID: "a", Item: -1})
	in := RunInput(query, "", map[string]any{"user": user})
	if user == "" {
		in["context"] = map[string]any{}
	}
	out, err := rt.Invoke(ctx, def, in, nil)
	if err != nil {
		t.Fatalf("%s: %v", runID, err)
	}
	return out
}

// A second run with the same session key sends the earlier turns before
// its user message; another key sends none; the window keeps the newest.
func TestConversationMemorySendsEarlierTurnsWithinTheWindow(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t, llmtest.Turn{Text: "a1"}, llmtest.Turn{Text: "a2"}, llmtest.Turn{Text: "b1"},
		llmtest.Turn{Text: "a3"}, llmtest.Turn{Text: "a4"}, llmtest.Turn{Text: "n1"})
	s := mustSet(t, f.URL+"/v1", memoryAgent)
	def, _ := s.Get("helper")
	store := newMemStore()
	rt := &Runtime{Set: s, Conversations: store}

	askAs(t, rt, def, "r1", "ada", "q1")
	out := askAs(t, rt, def, "r2", "ada", "q2")
	askAs(t, rt, def, "r3", "bob", "p1")
	askAs(t, rt, def, "r4", "ada", "q3")
	out5 := askAs(t, rt, def, "r5", "ada", "q4")
	noKey := askAs(t, rt, def, "r6", "", "lone")

	reqs := f.Requests()
	want := []string{
		"user:q1",
		"user:q1 | assistant:a1 | user:q2",
		"user:p1", // another session: nothing of ada's
		"user:q1 | assistant:a1 | user:q2 | assistant:a2 | user:q3",
		"user:q2 | assistant:a2 | user:q3 | assistant:a3 | user:q4", // max_messages 4: q1 and a1 dropped
		"user:lone", // no session key: no memory
	}
	for i, w := range want {
		if got := sent(t, reqs[i]); got != w {
			t.Errorf("request %d sent %q, want %q", i+1, got, w)
		}
	}
	if m := fmt.Sprint(out["memory"]); m != "map[dropped:0 included:2 session:ada]" {
		t.Errorf("memory of run 2: %s", m)
	}
	if m := fmt.Sprint(out5["memory"]); m != "map[dropped:2 included:4 session:ada]" {
		t.Errorf("memory of run 5: %s", m)
	}
	if _, ok := noKey["memory"]; ok {
		t.Errorf("a call without a session key reports memory: %v", noKey)
	}
	if got := store.turns("helper", "ada"); len(got) != 8 || got[7] != "assistant:a4" {
		t.Errorf("kept for ada: %v", got)
	}
}

// max_tokens keeps the newest turns whose estimate fits; a kept answer
// whose question did not fit is dropped too.
func TestConversationMemoryTokenWindow(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 30) // 10 estimated tokens
	f := llmtest.NewOpenAI(t, llmtest.Turn{Text: long}, llmtest.Turn{Text: long}, llmtest.Turn{Text: "c"},
		llmtest.Turn{Text: long}, llmtest.Turn{Text: "d"})
	doc := strings.Replace(memoryAgent, "max_messages: 4}", "max_tokens: 25}", 1)
	s := mustSet(t, f.URL+"/v1", doc)
	def, _ := s.Get("helper")
	rt := &Runtime{Set: s, Conversations: newMemStore()}
	askAs(t, rt, def, "r1", "ada", long)
	askAs(t, rt, def, "r2", "ada", long+"2")
	out := askAs(t, rt, def, "r3", "ada", "q3")
	if got, want := sent(t, f.Requests()[2]), "user:"+long+"2 | assistant:"+long+" | user:q3"; got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
	if m := fmt.Sprint(out["memory"]); m != "map[dropped:2 included:2 session:ada]" {
		t.Errorf("memory %s", m)
	}
	// only bea's last answer fits: alone it would open with the model, so none is sent
	doc = strings.Replace(memoryAgent, "max_messages: 4}", "max_tokens: 12}", 1)
	s2 := mustSet(t, f.URL+"/v1", doc)
	def2, _ := s2.Get("helper")
	rt.Set = s2
	askAs(t, rt, def2, "r4", "bea", long)
	out = askAs(t, rt, def2, "r5", "bea", "q5")
	if got := sent(t, f.Requests()[4]); got != "user:q5" {
		t.Errorf("sent %q", got)
	}
	if m := fmt.Sprint(out["memory"]); m != "map[dropped:2 included:0 session:bea]" {
		t.Errorf("memory %s", m)
	}
}

// The same node execution run again (replayed after a crash before its
// checkpoint) keeps its turns once.
func TestConversationMemoryAppendsOncePerExecution(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t, llmtest.Turn{Text: "a1"}, llmtest.Turn{Text: "a1 again"})
	s := mustSet(t, f.URL+"/v1", memoryAgent)
	def, _ := s.Get("helper")
	store := newMemStore()
	rt := &Runtime{Set: s, Conversations: store}
	askAs(t, rt, def, "r1", "ada", "q1")
	askAs(t, rt, def, "r1", "ada", "q1")
	if got := store.turns("helper", "ada"); fmt.Sprint(got) != "[user:q1 assistant:a1]" {
		t.Fatalf("kept %v", got)
	}
}

// Through the engine: a node retried after a failed model call, and a node
// paused at a gated call, each keep their turns once, when they finish,
// under the chain and node of the agent defined there.
func TestConversationMemoryRetriedAndPausedNodeAppendOnce(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Status: 500, Body: "down"},
		llmtest.Turn{Text: "first answer"},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "c1", Name: "echo", Args: `{"message":"hi"}`}}},
		llmtest.Turn{Text: "echoed"})
	s := mustSet(t, f.URL+"/v1")
	store := newMemStore()
	reg := testRegistry()
	rt := &Runtime{Set: s, Registry: reg, Conversations: store}
	eng := engine.New(engine.Options{Registry: reg, Agent: rt.RunNode})
	c := &chain.Chain{Name: "support", Nodes: []chain.Node{{ID: "ask", Kind: chain.KindAgent,
		Retry: &chain.Retry{MaxAttempts: 2},
		Config: map[string]any{
			"model":  map[string]any{"url": f.URL + "/v1", "name": "m", "stream": false},
			"tools":  []any{map[string]any{"tool": "echo", "approval": "required"}},
			"memory": map[string]any{"session_key": "session_id"},
		}}}}
	plan := enginetest.PlanOf(eng, c)
	ctx := context.Background()
	res, err := eng.Run(ctx, plan, RunInput("hello", "s1", nil), engine.RunOptions{})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	if len(store.appends) != 1 || !strings.HasPrefix(store.appends[0], res.RunID+"/ask/") {
		t.Fatalf("appends after a retried node: %v", store.appends)
	}
	res, err = eng.Run(ctx, plan, RunInput("echo hi", "s1", nil), engine.RunOptions{})
	if err != nil || res.Status != chain.StatusPaused {
		t.Fatalf("second run: %v %+v", err, res)
	}
	if got := store.turns("support:ask", "s1"); len(got) != 2 {
		t.Fatalf("a paused node kept turns: %v", got)
	}
	res, err = eng.Resume(ctx, res.RunID, &engine.ResumeValue{Action: engine.ActionApprove, By: "ana"}, nil, engine.ResumeOptions{})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	want := "[user:hello assistant:first answer user:echo hi assistant:echoed]"
	if got := store.turns("support:ask", "s1"); fmt.Sprint(got) != want {
		t.Fatalf("kept %v, want %s", got, want)
	}
	// the paused run's first request had the earlier turns; the one after the answer still has them
	reqs := f.Requests()
	if got := sent(t, reqs[2]); got != "user:hello | assistant:first answer | user:echo hi" {
		t.Fatalf("sent %q", got)
	}
	if got := sent(t, reqs[3]); !strings.HasPrefix(got, "user:hello | assistant:first answer | user:echo hi | assistant:") {
		t.Fatalf("after the answer sent %q", got)
	}
	if out := res.FinalOutput.(map[string]any); fmt.Sprint(out["memory"]) != "map[dropped:0 included:2 session:s1]" {
		t.Fatalf("output %v", out)
	}
}

// Without a store the node runs without memory and warns.
func TestConversationMemoryOffWarns(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t, llmtest.Turn{Text: "a1"})
	s := mustSet(t, f.URL+"/v1", memoryAgent)
	def, _ := s.Get("helper")
	var steps []string
	out, err := (&Runtime{Set: s}).Invoke(context.Background(), def, RunInput("q", "", map[string]any{"user": "ada"}), func(p any) {
		if m, ok := p.(map[string]any); ok && m["step"] == StepWarning {
			steps = append(steps, fmt.Sprint(m["text"]))
		}
	})
	if err != nil || out["answer"] != "a1" {
		t.Fatalf("%v %v", out, err)
	}
	if len(steps) != 1 || !strings.Contains(steps[0], "memory is off") {
		t.Fatalf("warnings %v", steps)
	}
}

// A memory block's mistakes name their field, in agent files and nodes.
func TestConversationMemoryProblemsNameTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		memory map[string]any
		field  string
		says   string
	}{
		{map[string]any{"session_key": "input.("}, "config.memory.session_key", "memory.session_key"},
		{map[string]any{}, "config.memory.session_key", "is required"},
		{map[string]any{"session_key": "session_id", "max_messages": -1.0}, "config.memory.max_messages", "must be between 1"},
		{map[string]any{"session_key": "session_id", "max_tokens": -5.0}, "config.memory.max_tokens", "must be between 1"},
		{map[string]any{"session_key": "session_id", "window": 3.0}, "config.memory.window", "unknown field"},
	} {
		cfg := map[string]any{"model": map[string]any{"url": "http://127.0.0.1:9/v1", "name": "m"}, "memory": tc.memory}
		_, probs := DefinedAgent(definedNode(cfg), testProviders)
		found := false
		for _, p := range probs {
			found = found || (p.Field == tc.field && strings.Contains(p.Message, tc.says))
		}
		if !found {
			t.Errorf("%v: problems %+v, want one at %s saying %q", tc.memory, probs, tc.field, tc.says)
		}
	}
	_, err := parseSet(t, "http://127.0.0.1:9/v1", "name: x\nmodel: {url: \"%URL%\", name: m}\nmemory: {session_key: context.user, max_messages: -3}\n")
	if err == nil || !strings.Contains(err.Error(), "memory.max_messages is -3") {
		t.Fatalf("agent file: %v", err)
	}
	_, err = parseSet(t, "", "name: x\ntool: echo\nmemory: {session_key: context.user}\n")
	if err == nil || !strings.Contains(err.Error(), "memory is used only by model agents") {
		t.Fatalf("tool agent: %v", err)
	}
}

// failingStore loads nothing and fails every append.
type failingStore struct{ *memStore }

func (*failingStore) Append(context.Context, string, string, string, []Turn) error {
	return fmt.Errorf("disk full")
}

// A turn the store fails to keep leaves the answer as it is, and says so.
func TestConversationMemoryAppendFailureWarns(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t, llmtest.Turn{Text: "a1"})
	s := mustSet(t, f.URL+"/v1", memoryAgent)
	def, _ := s.Get("helper")
	store := &failingStore{newMemStore()}
	var warned []string
	ctx := tool.WithExecution(context.Background(), tool.Execution{RunID: "r1", NodeID: "a", Item: -1})
	out, err := (&Runtime{Set: s, Conversations: store}).Invoke(ctx, def, RunInput("q", "", map[string]any{"user": "ada"}), func(p any) {
		if m, ok := p.(map[string]any); ok && m["step"] == StepWarning {
			warned = append(warned, fmt.Sprint(m["text"]))
		}
	})
	if err != nil || out["answer"] != "a1" {
		t.Fatalf("%v %v", out, err)
	}
	if m := out["memory"].(map[string]any); !strings.Contains(fmt.Sprint(m["error"]), "disk full") || len(warned) != 1 {
		t.Fatalf("memory %v, warnings %v", m, warned)
	}
}

// The props form of an agent defined in its node offers memory.
func TestConversationMemoryInTheNodeForm(t *testing.T) {
	t.Parallel()
	s := DefinedConfigSchema(testProviders)
	mem := at(t, s, "properties", "memory").(map[string]any)
	if at(t, mem, "properties", "session_key", "type") != "string" || fmt.Sprint(mem["required"]) != "[session_key]" {
		t.Fatalf("memory %v", mem)
	}
	if order := fmt.Sprint(s["x-order"]); !strings.HasSuffix(order, "memory]") {
		t.Fatalf("x-order %s", order)
	}
}

// An execution's key fits the store however long its node id, and stays
// one per execution.
func TestConversationMemoryKeyOfALongNodeID(t *testing.T) {
	t.Parallel()
	ex := tool.Execution{RunID: "r1", NodeID: strings.Repeat("n", 256), Item: -1}
	k1 := executionKey(tool.WithExecution(context.Background(), ex))
	k2 := executionKey(tool.WithExecution(context.Background(), ex))
	ex.Iteration = 2
	k3 := executionKey(tool.WithExecution(context.Background(), ex))
	if len(k1) > maxKeyBytes || k1 != k2 || k1 == k3 {
		t.Fatalf("keys %q %q %q", k1, k2, k3)
	}
}
