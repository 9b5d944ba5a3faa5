//go:build linux

package examples_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/llm/anthropic"
	"github.com/chainstudio/studio/engine/llm/gemini"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/engine/llm/openai"
	"github.com/chainstudio/studio/engine/sandbox"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/examples"
)

// TestMain lets the test binary be the sandbox's child, as the studio's
// binary is (`studio __sandbox`): the templates' code nodes run for real.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.ChildArg {
		sandbox.Child(os.Args[2:])
	}
	os.Exit(m.Run())
}

// templateCredential is the credential the LLM triage names.
const templateCredential = "openai-api"

// issueKey is what a template's expected issues are compared by.
type issueKey struct {
	Rule     string
	Severity chain.Severity
	Node     string
}

// wantIssues lists, per template, every issue validation may report: in a
// studio without the credentials the template names, and in one with them.
// A template missing here fails the test, so a new one gets its list.
var wantIssues = map[string]struct{ without, with []issueKey }{
	// The model's key is a credential the studio must be given: until then
	// validation names it (an error: the run would fail at the call).
	"llm-triage":     {without: []issueKey{{chain.RuleUnknownCredential, chain.SeverityError, "classify"}}},
	"map-code":       {},
	"webhook-notify": {},
}

// templateRegistry is the studio's registry of built-in tools (as
// cmd/studio builds it), with the http tool allowed to reach loopback,
// where these tests' fakes listen, and code nodes run by pool.
func templateRegistry(pool *sandbox.Pool) *engine.Registry {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{HTTPAllowPrivate: true, Code: pool}))
	reg.SetInline(builtin.Inline...)
	reg.SetScoped(builtin.Scoped...)
	reg.SetContained(builtin.Contained...)
	for n, c := range builtin.Checks(builtin.Options{}) {
		reg.SetCheck(n, c)
	}
	for _, t := range builtin.Catalog() {
		reg.SetInputSchema(t.Name, t.InputSchema)
	}
	for n, sc := range builtin.OutputSchemas() {
		reg.SetOutputSchema(n, sc)
	}
	return reg
}

// templateAgents is the studio's agent set with no agent files (as
// `studio serve` loads one), for the agent nodes that define their own.
func templateAgents(t testing.TB) *agent.Set {
	t.Helper()
	set, err := agent.NewSet(nil, agent.LoadOptions{Providers: llm.Kinds{openai.Kind, anthropic.Kind, gemini.Kind}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// validateOpts are the checks the studio holds a saved chain to
// (runs.Service.ValidateOptions), with creds as its credential store.
func validateOpts(reg *engine.Registry, agents *agent.Set, creds map[string]string) chain.ValidateOptions {
	return chain.ValidateOptions{
		Tools:           reg.Has,
		ToolUnavailable: reg.Unavailable,
		ToolOutput:      reg.OutputSchema,
		Schemas:         reg.NodeSchemas(agents.NodeSchemas),
		Check:           reg.NodeCheck,
		NodeConfig:      agents.CheckNode,
		Credential: func(name string) chain.CredentialUse {
			typ, ok := creds[name]
			return chain.CredentialUse{Type: typ, Found: ok, Allowed: ok}
		},
	}
}

func issueKeys(issues []chain.Issue) []issueKey {
	out := []issueKey{}
	for _, is := range issues {
		out = append(out, issueKey{is.Rule, is.Severity, is.NodeID})
	}
	return out
}

// secrets is a credential store of fixed secrets (tool.Credentials).
type secrets map[string]*tool.Secret

func (s secrets) Credential(_ context.Context, name string) (*tool.Secret, error) {
	if sec, ok := s[name]; ok {
		return sec, nil
	}
	return nil, errors.New("no credential " + name)
}

func templateDocs(t *testing.T) map[string]*chain.Chain {
	t.Helper()
	all, err := examples.Templates()
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]*chain.Chain{}
	for _, x := range all {
		doc, req, err := chain.DecodeDocument(x.Data, chain.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", x.ID, err)
		}
		if req != nil {
			t.Fatalf("%s: an A2E request, not a studio chain document", x.ID)
		}
		docs[x.ID] = doc
	}
	return docs
}

// Every template decodes, says what it is, validates with no issue beyond
// the ones listed in wantIssues (with and without its credentials), and
// passes its own chain tests, code nodes run in the sandbox.
func TestTemplatesValidateAndPassTheirTests(t *testing.T) {
	docs := templateDocs(t)
	var ids []string
	for id := range docs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if want := []string{"llm-triage", "map-code", "webhook-notify"}; !slices.Equal(ids, want) {
		t.Fatalf("templates %v, want %v (a new one needs its issues in wantIssues and a run below)", ids, want)
	}
	pool := codePool(t)
	reg := templateRegistry(pool)
	agents := templateAgents(t)
	for _, id := range ids {
		doc := docs[id]
		t.Run(id, func(t *testing.T) {
			if strings.TrimSpace(doc.Name) == "" || len(doc.Description) < 40 {
				t.Errorf("name %q, description %q: the dialog shows both", doc.Name, doc.Description)
			}
			if doc.SampleInput == nil {
				t.Errorf("no sample_input: the Run dialog offers it")
			}
			want := wantIssues[id]
			if got := issueKeys(chain.ValidateWith(doc, validateOpts(reg, agents, nil))); !slices.Equal(got, append([]issueKey{}, want.without...)) {
				t.Errorf("issues without credentials: %v, want %v\n%v", got, want.without, chain.ValidateWith(doc, validateOpts(reg, agents, nil)))
			}
			withCreds := validateOpts(reg, agents, map[string]string{templateCredential: credential.OpenAI})
			if issues := chain.ValidateWith(doc, withCreds); !slices.Equal(issueKeys(issues), append([]issueKey{}, want.with...)) {
				t.Errorf("issues with the credential: %v, want %v", issues, want.with)
			}
			if len(doc.Tests) < 2 {
				t.Fatalf("%d chain tests; a template carries at least two", len(doc.Tests))
			}
			rep, err := chaintest.Run(context.Background(), doc, chaintest.Options{Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range rep.Tests {
				if !tr.Passed {
					t.Errorf("chain test %q: %s, failures %+v", tr.Name, tr.Status, tr.Failures)
				}
			}
		})
	}
}

// Every template runs end to end on the real engine: the http nodes
// against fakes on loopback (the model is the repo's scripted OpenAI
// fake), the code nodes in the sandbox, the approval paused and answered.
func TestTemplatesRunEndToEnd(t *testing.T) {
	docs := templateDocs(t)
	reg := templateRegistry(codePool(t))
	rt := &agent.Runtime{Set: templateAgents(t), Registry: reg}
	eng := engine.New(engine.Options{Registry: reg, Checkpointer: engine.NewMemoryCheckpointer(), Agent: rt.RunNode})
	ctx := tool.WithCredentials(context.Background(), secrets{
		templateCredential: {Name: templateCredential, Type: credential.OpenAI, Hosts: []string{"127.0.0.1"}, Values: map[string]any{"api_key": "sk-template-test"}},
	})
	node := func(t *testing.T, doc *chain.Chain, id string) *chain.Node {
		t.Helper()
		for i := range doc.Nodes {
			if doc.Nodes[i].ID == id {
				return &doc.Nodes[i]
			}
		}
		t.Fatalf("no node %s", id)
		return nil
	}
	run := func(t *testing.T, doc *chain.Chain, input map[string]any) (*engine.Result, *engine.MemorySink) {
		t.Helper()
		sink := &engine.MemorySink{}
		res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), input, engine.RunOptions{Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		return res, sink
	}
	final := func(res *engine.Result) string {
		b, _ := json.Marshal(res.FinalOutput)
		return string(b)
	}

	t.Run("map-code", func(t *testing.T) {
		doc := docs["map-code"].Clone()
		res, sink := run(t, doc, doc.SampleInput)
		if res.Status != chain.StatusCompleted || final(res) != `{"big":["A-1","A-3"],"orders":3,"total":497.5}` {
			t.Fatalf("%s %+v: %s", res.Status, res.Error, final(res))
		}
		// The script ran in the sandbox once per order: its console.log lines
		// are the code tool's progress.
		var logged []string
		for _, e := range sink.Events() {
			if m, ok := e.Progress.(map[string]any); ok && m["step"] == builtin.StepLog {
				for _, l := range m["lines"].([]any) {
					logged = append(logged, l.(string))
				}
			}
		}
		slices.Sort(logged)
		if want := []string{"A-1 total 187.5", "A-2 total 70", "A-3 total 240"}; !slices.Equal(logged, want) {
			t.Fatalf("the code step logged %q, want %q", logged, want)
		}
	})

	t.Run("webhook-notify", func(t *testing.T) {
		var mu sync.Mutex
		var posted []map[string]any
		var status = http.StatusServiceUnavailable
		fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/health":
				mu.Lock()
				s := status
				mu.Unlock()
				w.WriteHeader(s)
				_, _ = w.Write([]byte("checked"))
			case "/chat-hook":
				var m map[string]any
				if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
					http.Error(w, "want a JSON POST", http.StatusBadRequest)
					return
				}
				mu.Lock()
				posted = append(posted, m)
				mu.Unlock()
				_, _ = w.Write([]byte("ok"))
			default:
				http.NotFound(w, r)
			}
		}))
		defer fake.Close()
		doc := docs["webhook-notify"].Clone()
		node(t, doc, "notify").Input["url"] = fake.URL + "/chat-hook"
		// The webhook's JSON body is the run's input.
		in := map[string]any{"url": fake.URL + "/health"}

		res, _ := run(t, doc, in)
		if res.Status != chain.StatusCompleted || res.Outputs["notify"] == nil || res.Outputs["notify"].(map[string]any)["status"] != 200.0 {
			t.Fatalf("down: %s %+v: %v", res.Status, res.Error, res.Outputs)
		}
		mu.Lock()
		got := posted
		mu.Unlock()
		if len(got) != 1 || got[0]["text"] != fake.URL+"/health answered 503" {
			t.Fatalf("the chat webhook got %v", got)
		}

		mu.Lock()
		status = http.StatusOK
		mu.Unlock()
		res, _ = run(t, doc, in)
		if res.Status != chain.StatusCompleted || final(res) != `{"status":200,"url":"`+fake.URL+`/health"}` {
			t.Fatalf("up: %s %+v: %s", res.Status, res.Error, final(res))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(posted) != 1 {
			t.Fatalf("a URL that is up notified: %v", posted)
		}
	})

	t.Run("llm-triage", func(t *testing.T) {
		model := llmtest.NewOpenAI(t,
			llmtest.Turn{Text: `{"category": "refund", "summary": "Charged twice for order 1234."}`},
			llmtest.Turn{Text: `{"category": "bug", "summary": "Export crashes."}`},
		)
		// The fake does not look at the key; this server in front of it does.
		var mu sync.Mutex
		var auth []string
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			auth = append(auth, r.Header.Get("Authorization"))
			mu.Unlock()
			model.Config.Handler.ServeHTTP(w, r)
		}))
		defer front.Close()
		doc := docs["llm-triage"].Clone()
		node(t, doc, "classify").Config["model"].(map[string]any)["url"] = front.URL + "/v1"

		res, _ := run(t, doc, map[string]any{"message": "I was charged twice for order 1234."})
		if res.Status != chain.StatusPaused || len(res.Pending) != 1 || res.Pending[0].NodeID != "approve_refund" {
			t.Fatalf("refund: %s %+v, pending %+v", res.Status, res.Error, res.Pending)
		}
		reqs := model.Requests()
		if len(reqs) != 1 {
			t.Fatalf("the model was asked %d times", len(reqs))
		}
		req := reqs[0]
		msgs, _ := req["messages"].([]any)
		// a server other than OpenAI's own is asked for the schema in the prompt
		if req["model"] != "gpt-4o-mini" || len(msgs) != 2 || !strings.HasPrefix(msgs[1].(map[string]any)["content"].(string), "I was charged twice for order 1234.") ||
			!strings.Contains(msgs[1].(map[string]any)["content"].(string), `"refund"`) {
			t.Fatalf("the model was asked %v", req)
		}
		mu.Lock()
		if len(auth) != 1 || auth[0] != "Bearer sk-template-test" {
			t.Fatalf("the model got Authorization %q", auth)
		}
		mu.Unlock()

		res, err := eng.Resume(ctx, res.RunID, engine.NewAnswer(engine.ActionApprove, nil, false), nil, engine.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := `{"message":"I was charged twice for order 1234.","queue":"refunds","summary":"Charged twice for order 1234."}`
		if res.Status != chain.StatusCompleted || final(res) != want {
			t.Fatalf("approved: %s %+v: %s", res.Status, res.Error, final(res))
		}

		res, _ = run(t, doc, map[string]any{"message": "The export button crashes the page."})
		if res.Status != chain.StatusCompleted || res.Outputs["approve_refund"] != nil ||
			final(res) != `{"message":"The export button crashes the page.","queue":"bugs","summary":"Export crashes."}` {
			t.Fatalf("bug: %s %+v: %s", res.Status, res.Error, final(res))
		}
	})
}

var testPool struct {
	once sync.Once
	p    *sandbox.Pool
	err  error
}

// codePool is one sandbox pool for the package's tests; its children are
// this test binary (TestMain).
func codePool(t testing.TB) *sandbox.Pool {
	testPool.once.Do(func() {
		testPool.p, testPool.err = sandbox.NewPool(os.Args[0], sandbox.Limits{Workers: 1, CPUSeconds: 2, MemoryMB: 128})
	})
	if testPool.err != nil {
		t.Fatalf("sandbox pool: %v", testPool.err)
	}
	return testPool.p
}
