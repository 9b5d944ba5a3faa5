package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const leaf = "name: %s\ntool: echo\n"

func leafAgent(name string) string { return fmt.Sprintf(leaf, name) }

func TestStartupErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		docs []string
		want []string
	}{
		{"cycle", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: b\n",
			"name: b\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: a\n",
		}, []string{`cycle in spec.chain: a -> b -> a`, `agent "b": cycle in spec.chain: b -> a -> b`}},
		{"self cycle", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: a\n",
		}, []string{"a -> a"}},
		{"depth over max_depth", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    max_depth: 2\n    on_complete:\n      - agent: b\n",
			"name: b\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: c\n",
			"name: c\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: d\n",
			leafAgent("d"),
		}, []string{`deeper than max_depth 2: a -> b -> c -> d is 3 links deep`}},
		{"default depth 5", []string{
			"name: a1\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: a2}]\n",
			"name: a2\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: a3}]\n",
			"name: a3\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: a4}]\n",
			"name: a4\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: a5}]\n",
			"name: a5\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: a6}]\n",
			"name: a6\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: a7}]\n",
			leafAgent("a7"),
		}, []string{"max_depth 5: a1 -> a2 -> a3 -> a4 -> a5 -> a6 -> a7 is 6 links deep"}},
		{"missing agent", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: ghost\n",
		}, []string{`agent "a": spec.chain.on_complete[0] names agent "ghost", which does not exist (path: a -> ghost)`}},
		{"missing agent deep", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: b\n",
			"name: b\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: echo-1\n      - agent: ghost\n",
			leafAgent("echo-1"),
		}, []string{`agent "b": spec.chain.on_complete[1] names agent "ghost"`, "path: a -> b -> ghost"}},
		{"missing handler", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: b\n        on_error: triage\n",
			leafAgent("b"),
		}, []string{`on_complete[0].on_error names agent "triage", which does not exist`}},
		{"default with when", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: b\n        when: '{{ output.data.x }}'\n        default: true\n",
			leafAgent("b"),
		}, []string{"on_complete[0] (b): default: true cannot carry a when"}},
		{"two defaults", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - {agent: b, default: true}\n      - {agent: c, default: true}\n",
			leafAgent("b"), leafAgent("c"),
		}, []string{"declares 2 rules with default: true (on_complete[0], on_complete[1])"}},
		{"empty on_complete", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    mode: sequential\n    on_complete: []\n",
		}, []string{"spec.chain.on_complete is empty"}},
		{"invalid mode", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    mode: fanout\n    on_complete: [{agent: b}]\n", leafAgent("b"),
		}, []string{`spec.chain.mode "fanout" is not valid (sequential or parallel)`}},
		{"max_depth 0", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    max_depth: 0\n    on_complete: [{agent: b}]\n", leafAgent("b"),
		}, []string{"max_depth is 0; it must be an integer ≥ 1"}},
		{"max_depth not an integer", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    max_depth: 2.5\n    on_complete: [{agent: b}]\n", leafAgent("b"),
		}, []string{`agent "a": spec.chain.max_depth: want an integer, got 2.5 (line 5)`}},
		{"parallel sibling steps", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    mode: parallel\n    on_complete:\n      - agent: b\n      - agent: c\n        when: '{{ steps.b.data.ok }}'\n",
			leafAgent("b"), leafAgent("c"),
		}, []string{"on_complete[1] (c).when reads steps.b", "use mode: sequential"}},
		{"parallel sibling when", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    mode: parallel\n    on_complete:\n      - agent: b\n        when: '{{ output.answer }}'\n      - agent: c\n        when: '{{ not when.b }}'\n",
			leafAgent("b"), leafAgent("c"),
		}, []string{"reads when.b", "use mode: sequential"}},
		{"input reads steps", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    mode: parallel\n    on_complete: [{agent: b}, {agent: c, input: '{{ steps.b.answer }}'}]\n", leafAgent("b"), leafAgent("c"),
		}, []string{"on_complete[1] (c).input reads steps.b"}},
		{"duplicate rule", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: b}, {agent: b, when: '{{ 1 }}'}]\n", leafAgent("b"),
		}, []string{`agent "b" is already listed at on_complete[0]`}},
		{"duplicate agent", []string{leafAgent("b"), leafAgent("b")}, []string{`agent "b" is defined twice`}},
		{"guard syntax", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: b\n        when: '{{ output.data.score > }}'\n", leafAgent("b"),
		}, []string{"on_complete[0] (b).when: syntax error"}},
		{"guard compares with a bare word", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: b\n        when: '{{ output.data.tier == gold }}'\n", leafAgent("b"),
		}, []string{`agent "a": spec.chain.on_complete[0] (b).when "{{ output.data.tier == gold }}" reads gold as a path, not as the text "gold"`, `write {{output.data.tier}} == gold or output.data.tier == 'gold'`}},
		{"bad retry", []string{
			"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: b\n        retry: {max_attempts: 0, backoff: linear}\n", leafAgent("b"),
		}, []string{"retry.max_attempts is 0", `retry.backoff "linear" is not valid`}},
		{"no model tool or chain", []string{"name: a\ndescription: nothing\n"}, []string{"needs one of model"}},
		{"model and tool", []string{"name: a\ntool: echo\nmodel: {url: 'http://x/v1', name: m}\n"}, []string{"more than one of model, tool and chain"}},
		{"model without name", []string{"name: a\nmodel: {url: 'http://x/v1'}\n"}, []string{"model.name is required"}},
		{"unknown tool", []string{"name: a\ntool: teleport\n"}, []string{`tool "teleport" does not exist`}},
		{"reserved name", []string{"name: output\ntool: echo\n"}, []string{`name "output" is reserved`}},
		{"bad name", []string{"name: a/b\ntool: echo\n"}, []string{`"a/b" is not a valid agent name`}},
		{"unknown field", []string{"name: a\ntool: echo\nspec:\n  chain:\n    on_compete: [{agent: b}]\n"}, []string{`agent "a": spec.chain.on_compete: unknown field (line 5); the fields here are max_depth, mode, on_complete`}},
		{"unquoted template", []string{"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: b\n        when: {{ output.x }}\n"}, []string{"templates must be quoted"}},
		{"bad schema type", []string{"name: a\ntool: echo\nspec:\n  output_schema:\n    score: {type: int}\n"}, []string{`spec.output_schema: score: type "int" is not a type this validator knows`}},
		{"two documents", []string{"name: a\ntool: echo\n---\nname: b\ntool: echo\n"}, []string{"more than one YAML document"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSet(t, "http://127.0.0.1:1/v1", tc.docs...)
			wantErrContains(t, err, tc.want...)
		})
	}
}

func TestLoadDirNamesFiles(t *testing.T) {
	t.Parallel()
	dir := writeDir(t, map[string]string{
		"a.agent.yaml":       "name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: ghost\n",
		"b.agent.yaml":       "name: b\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: c, default: true, when: '{{ 1 }}'}]\n",
		"c.agent.yaml":       leafAgent("c"),
		"notes.txt":          "ignored",
		"x.agent.yml":        "ignored too",
		"d.agent.yaml":       "name: [unclosed\n",
		"no-name.agent.yaml": "tool: echo\n",
	})
	// Problems of single files are reported together first ...
	_, err := LoadDir(dir, LoadOptions{})
	wantErrContains(t, err, dir+"/b.agent.yaml: agent \"b\": spec.chain.on_complete[0] (c): default: true cannot carry a when",
		dir+"/d.agent.yaml: line 1: ")
	// ... then references between agents.
	dir = writeDir(t, map[string]string{
		"a.agent.yaml": "name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: ghost\n",
		"b.agent.yaml": "name: b\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: a, on_error: nobody}]\n",
	})
	_, err = LoadDir(dir, LoadOptions{})
	wantErrContains(t, err, dir+"/a.agent.yaml: agent \"a\": spec.chain.on_complete[0] names agent \"ghost\"",
		dir+"/b.agent.yaml: agent \"b\": spec.chain.on_complete[0].on_error names agent \"nobody\"")
}

func TestLoadDirMissingIsEmpty(t *testing.T) {
	t.Parallel()
	s, err := LoadDir(t.TempDir()+"/nope", LoadOptions{})
	if err != nil || s.Len() != 0 {
		t.Fatalf("missing folder: %v, %d agents", err, s.Len())
	}
	dir := writeDir(t, map[string]string{"lead.agent.yaml": "tool: echo\n"})
	s, err = LoadDir(dir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("lead"); !ok {
		t.Fatalf("an agent without a name takes the file's: %v", s.Names())
	}
}

func TestYAMLAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("name: bomb\ntool: echo\ninput:\n  a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	start := time.Now()
	_, err := Parse([]byte(b.String()), "bomb.agent.yaml")
	wantErrContains(t, err, "bomb.agent.yaml: line 4: YAML anchors (&a0) are not allowed")
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refusing the bomb took %v", d)
	}
	// An alias without its anchor in this file is refused too (merge keys need aliases).
	_, err = Parse([]byte("name: x\ntool: echo\ninput:\n  <<: *base\n"), "m.agent.yaml")
	wantErrContains(t, err, "m.agent.yaml")
}

func TestYAMLSizeCap(t *testing.T) {
	t.Parallel()
	big := "name: big\ntool: echo\ndescription: '" + strings.Repeat("x", MaxFileSize) + "'\n"
	_, err := Parse([]byte(big), "big.agent.yaml")
	wantErrContains(t, err, "over the limit of 1048576 (1 MiB)")
	dir := writeDir(t, map[string]string{"big.agent.yaml": big})
	_, err = LoadDir(dir, LoadOptions{})
	wantErrContains(t, err, "big.agent.yaml: the file is over the limit")
}

func TestCompiledChainShape(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "",
		"name: a\ntool: echo\nspec:\n  chain:\n    mode: parallel\n    on_complete:\n"+
			"      - {agent: b, when: '{{ output.data.x > 1 }}', on_error: h, timeout_seconds: 3, retry: {max_attempts: 2, backoff: exponential, initial_delay_seconds: 0.5}}\n"+
			"      - {agent: c, input: '{{ output.data }}', on_error: continue}\n"+
			"      - {agent: d, default: true}\n",
		"name: b\ntool: echo\nspec:\n  chain:\n    on_complete: [{agent: c}]\n",
		leafAgent("c"), leafAgent("d"), leafAgent("h"))
	c, ok := s.Chain("a")
	if !ok || c.Name != "__chain__a" || !c.StrictConditions {
		t.Fatalf("chain: %+v", c)
	}
	ids := []string{}
	for _, n := range c.Nodes {
		ids = append(ids, n.ID)
	}
	if got := strings.Join(ids, " "); got != "a b b!h b/c c d" {
		t.Fatalf("node ids: %s", got)
	}
	root := c.Node("a")
	if root.Kind != "agent" || root.Routing != "all" || root.Dispatch != "parallel" {
		t.Fatalf("root: %+v", root)
	}
	b := c.Node("b")
	if b.OnError != "b!h" || b.Timeout != 3 || b.Retry.MaxAttempts != 2 || b.Retry.Backoff != "exponential" || b.InputMap["query"] != "{{ output.answer }}" || b.Dispatch != "sequential" {
		t.Fatalf("b: %+v", b)
	}
	if n := c.Node("c"); n.OnError != "continue" || n.InputMap["query"] != "{{ output.data }}" {
		t.Fatalf("c: %+v", n)
	}
	if n := c.Node("b/c"); n.OnError != "abort" {
		t.Fatalf("b/c: %+v", n)
	}
	wantEdges := "a->b[b|{{ output.data.x > 1 }}|false] b->b/c[c||false] a->c[c||false] a->d[d||true]"
	var got []string
	for _, e := range c.Edges {
		got = append(got, fmt.Sprintf("%s[%s|%s|%v]", e.ID, e.Label, e.Condition, e.Default))
	}
	if strings.Join(got, " ") != wantEdges {
		t.Fatalf("edges:\n%s\nwant\n%s", strings.Join(got, " "), wantEdges)
	}
	if _, ok := s.ResolveChain("__chain__a"); !ok {
		t.Fatal("ResolveChain")
	}
	if _, ok := s.Chain("c"); ok {
		t.Fatal("c has no chain")
	}
	if !IsReservedName("__chain__x") || IsReservedName("chain__x") {
		t.Fatal("IsReservedName")
	}
}

func TestGraph(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "",
		"name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - {agent: b, when: '{{ output.data.x > 1 }}'}\n      - {agent: d, default: true}\n",
		"name: b\ntool: echo\nspec:\n  chain:\n    mode: parallel\n    max_depth: 1\n    on_complete: [{agent: c, on_error: d}]\n",
		leafAgent("c"), leafAgent("d"))
	g, ok := s.Graph("a")
	if !ok || g.Mode != "sequential" || g.MaxDepth != 5 || g.Chain != "__chain__a" {
		t.Fatalf("graph: %+v", g)
	}
	var got []string
	for _, l := range g.Links {
		via, when := "null", "null"
		if l.Via != nil {
			via = *l.Via
		}
		if l.When != nil {
			when = *l.When
		}
		got = append(got, fmt.Sprintf("%s:%s@%d via=%s when=%s default=%v mode=%s handler_for=%s", l.NodeID, l.Agent, l.Depth, via, when, l.Default, l.Mode, l.HandlerFor))
	}
	want := []string{
		"b:b@1 via=null when={{ output.data.x > 1 }} default=false mode=sequential handler_for=",
		"b/c:c@2 via=b when=null default=false mode=parallel handler_for=",
		"b/c!d:d@2 via=b when=null default=false mode=parallel handler_for=b/c",
		"d:d@1 via=null when=null default=true mode=sequential handler_for=",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("links:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// b's own max_depth does not bound a's expansion; a's does.
	if _, ok := s.Graph("b"); !ok {
		t.Fatal("b has a graph")
	}
	if _, ok := s.Graph("c"); ok {
		t.Fatal("c declares no chain")
	}
}

// TestTypeErrorsNameFileAgentAndField: every typed field of the agent YAML,
// given a value of the wrong type, is reported as "<file>: agent "<name>":
// <field path>: want <type>, got <value> (line N)".
func TestTypeErrorsNameFileAgentAndField(t *testing.T) {
	t.Parallel()
	doc := func(rule string) string {
		return "name: a\ntool: echo\nspec:\n  chain:\n    on_complete:\n      - agent: b\n        " + rule + "\n"
	}
	cases := []struct{ doc, want string }{
		{"name: [a]\ntool: echo\n", `agent "a": name: want a string, got a list (line 1)`},
		{"name: a\ndescription: {x: 1}\ntool: echo\n", `agent "a": description: want a string, got a map (line 2)`},
		{"name: a\nmodel: http://x/v1\n", `agent "a": model: want a map, got "http://x/v1" (line 2)`},
		{"name: a\nmodel: {url: [x], name: m}\n", `agent "a": model.url: want a string, got a list (line 2)`},
		{"name: a\nmodel: {url: 'http://x/v1', name: {m: 1}}\n", `agent "a": model.name: want a string, got a map (line 2)`},
		{"name: a\nmodel: {url: 'http://x/v1', name: m, api_key_env: [K]}\n", `agent "a": model.api_key_env: want a string, got a list (line 2)`},
		{"name: a\nmodel: {url: 'http://x/v1', name: m, temperature: warm}\n", `agent "a": model.temperature: want a number, got "warm" (line 2)`},
		{"name: a\nmodel: {url: 'http://x/v1', name: m}\nsystem_prompt: [x]\n", `agent "a": system_prompt: want a string, got a list (line 3)`},
		{"name: a\nmodel: {url: 'http://x/v1', name: m}\nprompt: {x: 1}\n", `agent "a": prompt: want a string, got a map (line 3)`},
		{"name: a\ntool: [echo]\n", `agent "a": tool: want a string, got a list (line 2)`},
		{"name: a\nchain: {x: 1}\n", `agent "a": chain: want a string, got a map (line 2)`},
		{"name: a\ntool: echo\ninput: hello\n", `agent "a": input: want a map, got "hello" (line 3)`},
		{"name: a\ntool: echo\nspec: [x]\n", `agent "a": spec: want a map, got a list (line 3)`},
		{"name: a\ntool: echo\nspec:\n  chain: fire-b\n", `agent "a": spec.chain: want a map, got "fire-b" (line 4)`},
		{"name: a\ntool: echo\nspec:\n  chain:\n    mode: [sequential]\n    on_complete: [{agent: b}]\n", `agent "a": spec.chain.mode: want a string, got a list (line 5)`},
		{"name: a\ntool: echo\nspec:\n  chain:\n    max_depth: 2.5\n    on_complete: [{agent: b}]\n", `agent "a": spec.chain.max_depth: want an integer, got 2.5 (line 5)`},
		{"name: a\ntool: echo\nspec:\n  chain:\n    max_depth: three\n    on_complete: [{agent: b}]\n", `agent "a": spec.chain.max_depth: want an integer, got "three" (line 5)`},
		{"name: a\ntool: echo\nspec:\n  chain:\n    on_complete: {agent: b}\n", `agent "a": spec.chain.on_complete: want a list, got a map (line 5)`},
		{"name: a\ntool: echo\nspec:\n  chain:\n    on_complete: [b]\n", `agent "a": spec.chain.on_complete[0]: want a map, got "b" (line 5)`},
		{doc("when: [x]"), `agent "a": spec.chain.on_complete[0].when: want a string, got a list (line 7)`},
		{doc("input: {x: 1}"), `agent "a": spec.chain.on_complete[0].input: want a string, got a map (line 7); templates must be quoted`},
		{doc("timeout_seconds: 30s"), `agent "a": spec.chain.on_complete[0].timeout_seconds: want a number, got "30s" (line 7)`},
		{doc("on_error: [continue]"), `agent "a": spec.chain.on_complete[0].on_error: want a string, got a list (line 7)`},
		{doc("default: yes"), `agent "a": spec.chain.on_complete[0].default: want true or false, got "yes" (line 7)`},
		{doc("default: 1"), `agent "a": spec.chain.on_complete[0].default: want true or false, got 1 (line 7)`},
		{doc("retry: 3"), `agent "a": spec.chain.on_complete[0].retry: want a map, got 3 (line 7)`},
		{doc("retry: {max_attempts: 2.5}"), `agent "a": spec.chain.on_complete[0].retry.max_attempts: want an integer, got 2.5 (line 7)`},
		{doc("retry: {max_attempts: 2, backoff: 5}"), ``}, // a number is a valid string scalar; the backoff rule then rejects it
		{doc("retry: {max_attempts: 2, initial_delay_seconds: soon}"), `agent "a": spec.chain.on_complete[0].retry.initial_delay_seconds: want a number, got "soon" (line 7)`},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.doc), "agents/a.agent.yaml")
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), `retry.backoff "5" is not valid`) {
				t.Errorf("%q: %v", tc.doc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "agents/a.agent.yaml: "+tc.want) {
			t.Errorf("%q:\n got %v\nwant agents/a.agent.yaml: %s", tc.doc, err, tc.want)
		}
	}
	// Several mistakes are reported together; a name that is not a string
	// falls back to the file's name.
	_, err := Parse([]byte("name: 7.5\ntool: echo\nspec:\n  chain:\n    max_depth: 1.5\n    on_complete: [{agent: b, default: maybe}]\n"), "agents/lead.agent.yaml")
	wantErrContains(t, err, `agents/lead.agent.yaml: agent "lead": spec.chain.max_depth: want an integer, got 1.5 (line 5)`,
		`agents/lead.agent.yaml: agent "lead": spec.chain.on_complete[0].default: want true or false, got "maybe" (line 6)`)
}
