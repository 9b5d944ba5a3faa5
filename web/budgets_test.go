package web

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/engine/spend"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/web/api"
)

// budgetChain is ten agent nodes at once, each asking the model at url for
// at most 1000 tokens, each with an error handler that reads the error's
// code.
func budgetChain(url string) string {
	var nodes []string
	for i := range 10 {
		nodes = append(nodes,
			fmt.Sprintf(`{"node_id":"ask%d","kind":"agent","on_error":"h%d","input":{"query":"hi"},"config":{"model":{"url":%q,"name":"m","max_tokens":1000}}}`, i, i, url),
			fmt.Sprintf(`{"node_id":"h%d","kind":"tool","name":"transform","input":{"expression":"{code: code, message: message}"},"input_map":{"data":"error"}}`, i))
	}
	return `{"name":"budget","nodes":[` + strings.Join(nodes, ",") + `]}`
}

// Ten agent nodes at once against a run budget that fits three calls: the
// model gets exactly three requests, the seven others fail with
// budget_exceeded before any request, each routed to its on_error handler,
// and the run ends partial (failures handled).
func TestRunBudgetHoldsParallelAgents(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	turns := make([]llmtest.Turn, 10)
	for i := range turns {
		turns[i] = llmtest.Turn{Text: "ok", Hold: release}
	}
	model := llmtest.NewOpenAI(t, turns...)
	set, err := agent.NewSet(nil, agent.LoadOptions{Providers: testProviders})
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServerOpts(t, Config{}, testRegistry(), func(o *runs.Options) {
		o.Agents = set
		o.Budgets = runs.Budgets{Run: spend.Limit{Tokens: 3500}}
	})
	id := createChain(t, ts, budgetChain(model.URL+"/v1"))
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`)
	wantStatus(t, r, http.StatusAccepted)
	runID := r.json(t)["run_id"].(string)
	// the seven refused are handled while the three are still held
	testutil.Eventually(t, 20*time.Second, func() error {
		m := do(t, ts, "GET", "/v1/runs/"+runID, nil).json(t)
		handled := 0
		nodes, _ := m["nodes"].([]any)
		for _, n := range nodes {
			n := n.(map[string]any)
			if strings.HasPrefix(n["node_id"].(string), "h") && n["status"] == "done" {
				handled++
			}
		}
		if handled != 7 {
			return fmt.Errorf("%d handled", handled)
		}
		return nil
	})
	close(release)
	m := waitRun(t, ts, runID)
	if m["status"] != "partial" {
		t.Fatalf("run %v: %v", m["status"], m["error"])
	}
	if n := len(model.Requests()); n != 3 {
		t.Fatalf("the model got %d requests, want 3", n)
	}
	refused, answered, handled := 0, 0, 0
	for _, n := range m["nodes"].([]any) {
		n := n.(map[string]any)
		id := n["node_id"].(string)
		switch {
		case strings.HasPrefix(id, "ask") && n["status"] == "error":
			refused++
			if n["error_code"] != spend.CodeExceeded || !strings.Contains(n["error"].(string), "this run's budget is 3500 tokens") || !strings.Contains(n["error"].(string), "--budget-run-tokens") {
				t.Errorf("%s: %v %v", id, n["error_code"], n["error"])
			}
		case strings.HasPrefix(id, "ask") && n["status"] == "done":
			answered++
		case strings.HasPrefix(id, "h") && n["status"] == "done":
			handled++
			if out, _ := n["output"].(map[string]any); out["code"] != spend.CodeExceeded || !strings.Contains(fmt.Sprint(out["message"]), "the call was not made") {
				t.Errorf("handler %s read %v", id, out)
			}
		}
	}
	if refused != 7 || answered != 3 || handled != 7 {
		t.Fatalf("refused %d, answered %d, handled %d: want 7, 3 and 7", refused, answered, handled)
	}
	// the run page says how much of its budget the run used
	if page := string(do(t, ts, "GET", "/runs/"+runID, nil).body); !regexp.MustCompile(`This run&#39;s budget: \d+ of its 3500 tokens used`).MatchString(page) {
		t.Fatalf("the run page lacks the budget: %.200s", page[strings.Index(page, `id="usage-panel"`):])
	}
}

// A studio's daily budget already spent refuses the next run's first call,
// saying when it resets.
func TestDayBudgetRefusesWithItsReset(t *testing.T) {
	t.Parallel()
	model := llmtest.NewOpenAI(t, llmtest.Turn{Text: "ok"})
	set, _ := agent.NewSet(nil, agent.LoadOptions{Providers: testProviders})
	day := spend.NewDaily("the studio's daily budget", runs.DayBudgetFlags, spend.Limit{Tokens: 5000}, spend.Amount{Tokens: 4900}, nil)
	_, ts := newTestServerOpts(t, Config{}, testRegistry(), func(o *runs.Options) {
		o.Agents = set
		o.Budgets = runs.Budgets{Day: day}
	})
	id := createChain(t, ts, `{"name":"day","nodes":[{"node_id":"ask","kind":"agent","input":{"query":"hi"},"config":{"model":{"url":"`+model.URL+`/v1","name":"m","max_tokens":1000}}}]}`)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`)
	wantStatus(t, r, http.StatusAccepted)
	m := waitRun(t, ts, r.json(t)["run_id"].(string))
	reset := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).Format(time.RFC3339)
	msg := fmt.Sprint(m["error"])
	if m["status"] != "failed" || !strings.Contains(msg, "budget_exceeded") || !strings.Contains(msg, "the studio's daily budget is 5000 tokens; 4900 are spent") ||
		!strings.Contains(msg, "resets at "+reset) || !strings.Contains(msg, "--budget-day-tokens") {
		t.Fatalf("run %v: %s", m["status"], msg)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("the model got %d requests", n)
	}
	if page := string(do(t, ts, "GET", "/runs/"+m["id"].(string), nil).body); !strings.Contains(page, "The studio today: 4900 of 5000 tokens; it resets at 00:00 UTC.") {
		t.Fatalf("the run page lacks the day's budget")
	}
	// the usage API and page show the budget: its limit, spent, reset
	u := do(t, ts, "GET", "/v1/usage", nil).json(t)["budgets"].(map[string]any)
	d, _ := u["day"].(map[string]any)
	if u["run"] != nil || d == nil || d["limit"].(map[string]any)["tokens"] != 5000.0 || d["spent_tokens"] != 4900.0 || d["reserved_tokens"] != 0.0 || d["resets"] != reset {
		t.Fatalf("budgets: %v", u)
	}
	page := string(do(t, ts, "GET", "/usage", nil).body)
	if !strings.Contains(page, `id="budgets"`) || !strings.Contains(page, "The studio, today (UTC)") || !strings.Contains(page, "4900 tokens") {
		t.Fatalf("the usage page: %.3000s", page)
	}
}

// Without budgets the usage API says so, and the page says how to set one.
func TestNoBudgetsShown(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	u := do(t, ts, "GET", "/v1/usage", nil).json(t)["budgets"].(map[string]any)
	if u["run"] != nil || u["day"] != nil {
		t.Fatalf("budgets: %v", u)
	}
	if page := string(do(t, ts, "GET", "/usage", nil).body); !strings.Contains(page, `id="budgets-none"`) {
		t.Fatalf("the usage page: %.2000s", page)
	}
}

// withBudget puts a chain budget into a chain document.
func withBudget(doc, budget string) string {
	return strings.Replace(doc, `{"name":"budget",`, `{"name":"budget","budget":`+budget+`,`, 1)
}

// Ten agent nodes at once against the chain's own run budget that fits
// three calls (the studio sets none): exactly three requests are made and
// the refusals name the chain's setting.
func TestChainRunBudgetHoldsParallelAgents(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	turns := make([]llmtest.Turn, 10)
	for i := range turns {
		turns[i] = llmtest.Turn{Text: "ok", Hold: release}
	}
	model := llmtest.NewOpenAI(t, turns...)
	set, _ := agent.NewSet(nil, agent.LoadOptions{Providers: testProviders})
	_, ts := newTestServerOpts(t, Config{}, testRegistry(), func(o *runs.Options) { o.Agents = set })
	id := createChain(t, ts, withBudget(budgetChain(model.URL+"/v1"), `{"run":{"tokens":3500}}`))
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`)
	wantStatus(t, r, http.StatusAccepted)
	runID := r.json(t)["run_id"].(string)
	testutil.Eventually(t, 20*time.Second, func() error {
		if n := len(model.Requests()); n != 3 {
			return fmt.Errorf("%d requests", n)
		}
		return nil
	})
	close(release)
	m := waitRun(t, ts, runID)
	refused := 0
	for _, n := range m["nodes"].([]any) {
		n := n.(map[string]any)
		if strings.HasPrefix(n["node_id"].(string), "ask") && n["status"] == "error" {
			refused++
			if msg := n["error"].(string); n["error_code"] != spend.CodeExceeded || !strings.Contains(msg, "chain budget's run budget is 3500 tokens") || !strings.Contains(msg, "budget.run.tokens") {
				t.Errorf("%v: %v %v", n["node_id"], n["error_code"], msg)
			}
		}
	}
	if refused != 7 || len(model.Requests()) != 3 {
		t.Fatalf("refused %d, requests %d: want 7 and 3", refused, len(model.Requests()))
	}
	if page := string(do(t, ts, "GET", "/runs/"+runID, nil).body); !regexp.MustCompile(`Chain budget&#39;s run budget: \d+ of its 3500 tokens used`).MatchString(page) {
		t.Fatalf("the run page lacks the chain's run budget: %.300s", page[strings.Index(page, `id="usage-panel"`):])
	}
}

// A chain's day budget is one account for all its runs: while the first
// run's call is in flight, the second run's call does not fit and is
// refused, naming the chain's setting and when the budget resets; the
// usage API and page list the account.
func TestChainDayBudgetSharedByRuns(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	model := llmtest.NewOpenAI(t, llmtest.Turn{Text: "ok", Hold: release}, llmtest.Turn{Text: "ok"})
	set, _ := agent.NewSet(nil, agent.LoadOptions{Providers: testProviders})
	_, ts := newTestServerOpts(t, Config{}, testRegistry(), func(o *runs.Options) { o.Agents = set })
	id := createChain(t, ts, `{"name":"daily","budget":{"day":{"tokens":1800}},"nodes":[{"node_id":"ask","kind":"agent","input":{"query":"hi"},"config":{"model":{"url":"`+model.URL+`/v1","name":"m","max_tokens":1000}}}]}`)
	first := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`).json(t)["run_id"].(string)
	testutil.Eventually(t, 20*time.Second, func() error {
		if n := len(model.Requests()); n != 1 {
			return fmt.Errorf("%d requests", n)
		}
		return nil
	})
	second := waitRun(t, ts, do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`).json(t)["run_id"].(string))
	reset := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).Format(time.RFC3339)
	msg := fmt.Sprint(second["error"])
	if second["status"] != "failed" || !strings.Contains(msg, "budget_exceeded") || !strings.Contains(msg, "chain daily's daily budget is 1800 tokens; 0 are spent and") ||
		!strings.Contains(msg, "resets at "+reset) || !strings.Contains(msg, "budget.day.tokens") {
		t.Fatalf("second run %v: %s", second["status"], msg)
	}
	close(release)
	if m := waitRun(t, ts, first); m["status"] != "completed" {
		t.Fatalf("first run %v: %v", m["status"], m["error"])
	}
	if n := len(model.Requests()); n != 1 {
		t.Fatalf("the model got %d requests", n)
	}
	accounts := do(t, ts, "GET", "/v1/usage", nil).json(t)["budgets"].(map[string]any)["accounts"].([]any)
	if len(accounts) != 1 {
		t.Fatalf("accounts: %v", accounts)
	}
	a := accounts[0].(map[string]any)
	if a["scope"] != "chain" || a["name"] != "daily" || a["limit"].(map[string]any)["tokens"] != 1800.0 || a["spent_tokens"].(float64) <= 0 || a["reserved_tokens"] != 0.0 || a["resets"] != reset {
		t.Fatalf("account: %v", a)
	}
	if page := string(do(t, ts, "GET", "/usage", nil).body); !strings.Contains(page, "Chain daily, today (UTC)") || !strings.Contains(page, "budget.day") {
		t.Fatalf("the usage page: %.3000s", page)
	}
	if page := string(do(t, ts, "GET", "/runs/"+first, nil).body); !strings.Contains(page, "Chain daily today: ") {
		t.Fatalf("the run page lacks the chain's day budget")
	}
	// the chain's panel in the designer says where its day stands
	if _, html := pageDo(t, ts.URL, "POST", "/fragments/props", "application/json", `{"chain":{"name":"daily","nodes":[]}}`); !regexp.MustCompile(`Today: \d+ of 1800 tokens spent`).MatchString(html) {
		t.Fatalf("the chain panel: %s", html)
	}
}

// A negative budget, and one in cost while the studio has no price table,
// are validation errors naming the field.
func TestChainBudgetValidation(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	r := do(t, ts, "POST", "/v1/validate", `{"name":"v","budget":{"run":{"tokens":-5},"day":{"cost":2}},"nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`)
	wantStatus(t, r, http.StatusOK)
	want := map[string]string{"budget.run.tokens": "invalid_value", "budget.day.cost": "budget_unpriced"}
	for _, is := range r.json(t)["issues"].([]any) {
		m := is.(map[string]any)
		if rule, ok := want[fmt.Sprint(m["field"])]; ok && m["rule"] == rule && m["severity"] == "error" && strings.Contains(m["message"].(string), fmt.Sprint(m["field"])) {
			delete(want, fmt.Sprint(m["field"]))
		}
	}
	if len(want) > 0 {
		t.Fatalf("missing %v in %s", want, r.body)
	}
}

// A webhook's day budget holds the runs it starts: its run's call does not
// fit and is refused naming the trigger's field, while a run started by
// hand is not held to it; the listing shows the trigger's account. A bad
// budget is refused naming the field.
func TestTriggerBudget(t *testing.T) {
	t.Parallel()
	model := llmtest.NewOpenAI(t, llmtest.Turn{Text: "ok"})
	set, _ := agent.NewSet(nil, agent.LoadOptions{Providers: testProviders})
	_, ts := newTestServerOpts(t, Config{}, testRegistry(), func(o *runs.Options) { o.Agents = set })
	id := createChain(t, ts, `{"name":"hooked","nodes":[{"node_id":"ask","kind":"agent","input":{"query":"hi"},"config":{"model":{"url":"`+model.URL+`/v1","name":"m","max_tokens":1000}}}]}`)
	for body, field := range map[string]string{`{"budget":{"tokens":-1}}`: "budget.tokens", `{"budget":{"cost":0.5}}`: "budget.cost"} {
		r := do(t, ts, "POST", "/v1/chains/"+id+"/hooks", body)
		wantStatus(t, r, http.StatusBadRequest)
		if e := r.json(t)["error"].(map[string]any); e["code"] != "invalid_budget" || e["details"].(map[string]any)["field"] != field {
			t.Fatalf("%s: %s", body, r.body)
		}
	}
	r := do(t, ts, "POST", "/v1/chains/"+id+"/hooks", `{"budget":{"tokens":500}}`)
	wantStatus(t, r, http.StatusCreated)
	hook := r.json(t)
	if b := hook["budget"].(map[string]any); b["tokens"] != 500.0 {
		t.Fatalf("hook: %v", hook)
	}
	hid := hook["id"].(string)
	body := `{}`
	r = do(t, ts, "POST", "/v1/hooks/"+hid, body, api.HookSignatureHeader, api.SignHook(hook["secret"].(string), time.Now(), []byte(body)))
	wantStatus(t, r, http.StatusAccepted)
	m := waitRun(t, ts, r.json(t)["run_id"].(string))
	msg := fmt.Sprint(m["error"])
	if m["status"] != "failed" || !strings.Contains(msg, "trigger "+hid+"'s daily budget is 500 tokens") || !strings.Contains(msg, "budget.tokens") || !strings.Contains(msg, "resets at ") {
		t.Fatalf("hooked run %v: %s", m["status"], msg)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("the model got %d requests", n)
	}
	if page := string(do(t, ts, "GET", "/runs/"+m["id"].(string), nil).body); !strings.Contains(page, "Trigger "+hid+" today: 0 of 500 tokens") {
		t.Fatalf("the run page lacks the trigger's budget")
	}
	if m := waitRun(t, ts, do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`).json(t)["run_id"].(string)); m["status"] != "completed" {
		t.Fatalf("a run by hand %v: %v", m["status"], m["error"])
	}
	accounts := do(t, ts, "GET", "/v1/usage", nil).json(t)["budgets"].(map[string]any)["accounts"].([]any)
	if len(accounts) != 1 || accounts[0].(map[string]any)["scope"] != "trigger" || accounts[0].(map[string]any)["name"] != hid {
		t.Fatalf("accounts: %v", accounts)
	}
	// a schedule takes a budget too, checked the same way
	r = do(t, ts, "POST", "/v1/chains/"+id+"/schedules", `{"cron":"@daily","budget":{"cost":1}}`)
	wantStatus(t, r, http.StatusBadRequest)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/schedules", `{"cron":"@daily","enabled":false,"budget":{"tokens":900}}`)
	wantStatus(t, r, http.StatusCreated)
	if b, _ := r.json(t)["budget"].(map[string]any); b["tokens"] != 900.0 {
		t.Fatalf("schedule: %s", r.body)
	}
}

// A credential's day budget holds every model call that resolves it: the
// call is refused naming the credential's field, and the credential and
// the listing show the budget. A bad budget is refused naming the field.
func TestCredentialBudget(t *testing.T) {
	t.Parallel()
	model := llmtest.NewOpenAI(t, llmtest.Turn{Text: "ok"})
	set, _ := agent.NewSet(nil, agent.LoadOptions{Providers: testProviders})
	srv, ts := newVaultServerTuned(t, Config{Logger: testLogger()}, func(o *runs.Options) { o.Agents = set })
	h := roleTokens(t, srv)
	r := do(t, ts, "POST", "/v1/credentials", `{"name":"local","type":"openai_compatible","fields":{"base_url":"`+model.URL+`/v1"},"budget":{"tokens":-3}}`, h["admin"]...)
	wantStatus(t, r, http.StatusBadRequest)
	if e := r.json(t)["error"].(map[string]any); e["details"].(map[string]any)["field"] != "budget.tokens" {
		t.Fatalf("%s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"local","type":"openai_compatible","fields":{"base_url":"`+model.URL+`/v1"},"budget":{"tokens":500}}`, h["admin"]...), http.StatusCreated)
	if b, _ := do(t, ts, "GET", "/v1/credentials/local", nil, h["admin"]...).json(t)["budget"].(map[string]any); b["tokens"] != 500.0 {
		t.Fatalf("the credential lacks its budget")
	}
	id := createChainAs(t, ts, `{"name":"keyed","nodes":[{"node_id":"ask","kind":"agent","input":{"query":"hi"},"config":{"model":{"credential":"local","name":"m","max_tokens":1000}}}]}`, h["admin"])
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, h["admin"]...)
	wantStatus(t, r, http.StatusAccepted)
	m := waitRunAs(t, ts, r.json(t)["run_id"].(string), h["admin"])
	msg := fmt.Sprint(m["error"])
	if m["status"] != "failed" || !strings.Contains(msg, "credential local's daily budget is 500 tokens") || !strings.Contains(msg, "credential's budget.tokens") {
		t.Fatalf("run %v: %s", m["status"], msg)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("the model got %d requests", n)
	}
	// raised, the next call is made and counts against it
	wantStatus(t, do(t, ts, "PATCH", "/v1/credentials/local", `{"budget":{"tokens":5000}}`, h["admin"]...), http.StatusOK)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, h["admin"]...)
	runID := r.json(t)["run_id"].(string)
	if m := waitRunAs(t, ts, runID, h["admin"]); m["status"] != "completed" {
		t.Fatalf("run after raising %v: %v", m["status"], m["error"])
	}
	// the run page notes where the credential's day stands
	if page := string(do(t, ts, "GET", "/runs/"+runID, nil, h["admin"]...).body); !regexp.MustCompile(`Credential local today: \d+ of 5000 tokens`).MatchString(page) {
		t.Fatalf("the run page lacks the credential's budget: %.400s", page[strings.Index(page, `id="usage-panel"`):])
	}
	accounts := do(t, ts, "GET", "/v1/usage", nil, h["admin"]...).json(t)["budgets"].(map[string]any)["accounts"].([]any)
	a, _ := accounts[0].(map[string]any)
	if len(accounts) != 1 || a["scope"] != "credential" || a["name"] != "local" || a["limit"].(map[string]any)["tokens"] != 5000.0 || a["spent_tokens"].(float64) <= 0 {
		t.Fatalf("accounts: %v", accounts)
	}
}
