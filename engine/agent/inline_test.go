package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/llm/llmtest"
)

// definedNode is an agent node whose config defines its agent.
func definedNode(config map[string]any) *chain.Node {
	return &chain.Node{ID: "ask", Kind: chain.KindAgent, Config: config}
}

// Each mistake in a defined agent's config is one problem naming the
// field as the node has it.
func TestDefinedAgentProblemsNameTheField(t *testing.T) {
	t.Parallel()
	model := func(kv ...any) map[string]any {
		m := map[string]any{"url": "http://127.0.0.1:9/v1", "name": "m"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
				continue
			}
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		config map[string]any
		field  string
		says   string
	}{
		{"no model name", map[string]any{"model": model("name", nil)}, "config.model.name", "model.name is required"},
		{"unknown provider", map[string]any{"model": model("provider", "acme")}, "config.model.provider", `"acme" is not a provider the studio knows`},
		{"temperature as text", map[string]any{"model": model("temperature", "warm")}, "config.model.temperature", "want a number"},
		{"prompt that does not parse", map[string]any{"model": model(), "prompt": "{{ query "}, "config.prompt", "prompt"},
		{"output schema that is no schema", map[string]any{"model": model(), "output_schema": map[string]any{"type": "nonsense"}}, "config.output_schema", "output_schema"},
		{"repair without a schema", map[string]any{"model": model(), "repair": 2.0}, "config.repair", "declares none"},
		{"unknown setting", map[string]any{"model": model(), "temprature": 1.0}, "config.temprature", "is not a setting"},
		{"unknown setting and a bad prompt, both told", map[string]any{"model": model(), "temprature": 1.0, "prompt": "{{ query "}, "config.prompt", "prompt"},
		{"names and defines", map[string]any{"model": model(), "agent": "writer"}, "config.agent", "remove one of them"},
		{"tool with no target", map[string]any{"model": model(), "tools": []any{map[string]any{"name": "x"}}}, "config.tools[0]", "name a studio tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			def, probs := DefinedAgent(definedNode(tc.config), testProviders)
			if def != nil || len(probs) == 0 {
				t.Fatalf("no problem found: %+v", def)
			}
			for _, p := range probs {
				if p.Field == tc.field && strings.Contains(p.Message, tc.says) {
					return
				}
			}
			t.Fatalf("problems %+v, want one at %s saying %q", probs, tc.field, tc.says)
		})
	}
	def, probs := DefinedAgent(definedNode(map[string]any{"model": model(), "prompt": "{{ query }}", "output_schema": map[string]any{"type": "object"}, "repair": 1.0}), testProviders)
	if len(probs) > 0 || def.Name != "ask" || def.Model.Name != "m" || def.Schema() == nil || def.Repair == nil || *def.Repair != 1 {
		t.Fatalf("a good config: %+v %+v", def, probs)
	}
}

// The node check adds what needs the host: the credential (known, of a type
// the provider takes, allowed), the tools and the model URL's policy.
func TestCheckNodeCredentialToolsAndPolicy(t *testing.T) {
	t.Parallel()
	s, err := NewSet(nil, LoadOptions{Providers: testProviders,
		Tools:      func(name string) bool { _, ok := builtin.Tools(builtin.Options{})[name]; return ok },
		URLRefused: builtin.ModelURLRefused})
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]chain.CredentialUse{
		"openai-key": {Type: "openai", Found: true, Allowed: true},
		"claude":     {Type: "anthropic", Found: true, Allowed: true},
		"locked":     {Type: "openai", Found: true},
	}
	lookup := func(name string) chain.CredentialUse { return creds[name] }
	check := func(model map[string]any, extra ...any) []string {
		cfg := map[string]any{"model": model}
		for i := 0; i < len(extra); i += 2 {
			cfg[extra[i].(string)] = extra[i+1]
		}
		var out []string
		for _, p := range s.CheckNode(definedNode(cfg), lookup) {
			sev := "error"
			if p.Warning {
				sev = "warning"
			}
			out = append(out, p.Field+" "+p.Rule+" "+sev+": "+p.Message)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		got   []string
		wants []string // substrings, one problem each
	}{
		{"fits", check(map[string]any{"name": "gpt-4o-mini", "credential": "openai-key"}), nil},
		{"unknown", check(map[string]any{"name": "m", "credential": "nope"}), []string{"config.model.credential unknown_credential error", `"nope" is not a credential this studio has`}},
		{"wrong type", check(map[string]any{"name": "m", "credential": "claude"}), []string{"credential_type error", "is of type anthropic; the openai provider takes openai or openai_compatible"}},
		{"not allowed", check(map[string]any{"name": "m", "credential": "locked"}), []string{"credential_not_allowed error"}},
		{"private url", check(map[string]any{"name": "m", "url": "http://127.0.0.1:11434/v1"}), []string{"config.model.url host_policy warning", "--model-allow-private"}},
		{"unknown tool", check(map[string]any{"name": "m", "credential": "openai-key"}, "tools", []any{map[string]any{"tool": "nosuch"}}), []string{"config.tools[0].tool", `"nosuch" is not a tool`}},
	} {
		got := strings.Join(tc.got, "\n")
		if len(tc.wants) == 0 && got != "" {
			t.Errorf("%s: %s", tc.name, got)
		}
		for _, w := range tc.wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s: got %q, want %q", tc.name, got, w)
			}
		}
	}
	// a node that names its agent is the set's business, not this check's
	if p := s.CheckNode(&chain.Node{ID: "n", Kind: chain.KindAgent, Name: "writer"}, lookup); p != nil {
		t.Errorf("named agent: %+v", p)
	}
}

// A defined agent runs as a loaded one does: its prompt, its system prompt
// and its tool, with the fixed input merged and hidden from the model.
func TestDefinedAgentRuns(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "c1", Name: "say", Args: `{"data":"hi"}`}}},
		llmtest.Turn{Text: "Done: hi."})
	s, err := NewSet(nil, LoadOptions{Providers: testProviders})
	if err != nil {
		t.Fatal(err)
	}
	reg := testRegistry()
	for _, c := range builtin.Catalog() {
		reg.SetInputSchema(c.Name, c.InputSchema)
	}
	rt := &Runtime{Set: s, Registry: reg}
	nd := definedNode(map[string]any{
		"model":         map[string]any{"url": f.URL + "/v1", "name": "m", "stream": false},
		"system_prompt": "You greet.",
		"prompt":        "Greet {{ query }}",
		"tools":         []any{map[string]any{"tool": "transform", "name": "say", "description": "Says it.", "input": map[string]any{"expression": "@"}}},
	})
	out, err := rt.RunNode(context.Background(), nd, map[string]any{"query": "Ada"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := out.(map[string]any); m["answer"] != "Done: hi." {
		t.Fatalf("answer %v", m)
	}
	reqs := f.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := at(t, reqs[0], "messages").([]any)
	if at(t, msgs[0], "content") != "You greet." || at(t, msgs[1], "content") != "Greet Ada" {
		t.Fatalf("messages %v", msgs)
	}
	fn := at(t, reqs[0], "tools", 0, "function").(map[string]any)
	if fn["name"] != "say" || fn["description"] != "Says it." {
		t.Fatalf("tool offered %v", fn)
	}
	props := at(t, fn, "parameters", "properties").(map[string]any)
	if _, shown := props["expression"]; shown || props["data"] == nil {
		t.Fatalf("offered %v: want data, and the fixed expression hidden", props)
	}
	if got := at(t, reqs[1], "messages", 3, "content"); got != `"hi"` && got != "hi" {
		t.Fatalf("the tool's result sent back: %v", at(t, reqs[1], "messages"))
	}
	// a defined agent with a problem fails the node, naming it
	bad := definedNode(map[string]any{"model": map[string]any{"url": f.URL + "/v1"}})
	if _, err := rt.RunNode(context.Background(), bad, map[string]any{"query": "x"}, nil); err == nil || !strings.Contains(err.Error(), `agent node "ask": config.model.name is required`) {
		t.Fatalf("bad config: %v", err)
	}
}
