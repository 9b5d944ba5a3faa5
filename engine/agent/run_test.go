package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/chain"
)

// scorer is a tool agent whose data is {score} taken from the run context.
func scorer(doc string) string {
	return toolAgent("scorer", "{score: context.score}", doc)
}

func echoAgent(name string) string {
	return toolAgent(name, "{got: query}", "")
}

func TestFiringTable(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"sequential", "parallel"} {
		s := mustSet(t, "",
			scorer("    mode: "+mode+"\n    on_complete:\n"+
				"      - agent: hot\n        when: '{{ output.data.score > 7 }}'\n"+
				"      - agent: cold\n        when: '{{ output.data.score < 3 }}'\n"+
				"      - agent: logger\n"+
				"      - agent: triage\n        default: true\n"),
			echoAgent("hot"), echoAgent("cold"), echoAgent("logger"), echoAgent("triage"))
		cases := []struct {
			score                     float64
			hot, cold, logger, triage string // status[:reason]
		}{
			{9, "success", "skipped:condition_false", "success", "skipped:condition_false"},
			{1, "skipped:condition_false", "success", "success", "skipped:condition_false"},
			{5, "skipped:condition_false", "skipped:condition_false", "success", "success"}, // unguarded logger does not count as a match
		}
		for _, tc := range cases {
			res, r := runAgent(t, s, "scorer", "lead", map[string]any{"score": tc.score})
			if res.Status != chain.StatusCompleted || r.Chain.Status != "completed" || r.Chain.Mode != mode {
				t.Fatalf("%s score %v: run %s chain %+v", mode, tc.score, res.Status, r.Chain)
			}
			for id, want := range map[string]string{"hot": tc.hot, "cold": tc.cold, "logger": tc.logger, "triage": tc.triage} {
				st, reason, _ := strings.Cut(want, ":")
				wantLink(t, r, id, st, reason)
			}
			if got := r.Result["data"].(map[string]any)["score"]; got != tc.score {
				t.Fatalf("root data: %v", r.Result)
			}
		}
	}
}

func TestGuardsAreStrict(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "",
		scorer("    on_complete:\n      - agent: hot\n        when: '{{ output.data.scroe > 7 }}'\n        on_error: continue\n      - agent: logger\n"),
		echoAgent("hot"), echoAgent("logger"))
	res, r := runAgent(t, s, "scorer", "q", map[string]any{"score": 9})
	l := wantLink(t, r, "hot", "error", "")
	if !strings.Contains(l.Error, `path "output.data.scroe" does not exist`) {
		t.Fatalf("error: %q", l.Error)
	}
	wantLink(t, r, "logger", "success", "")
	if res.Status != chain.StatusPartial || r.Chain.Status != "partial" {
		t.Fatalf("status %s / %s", res.Status, r.Chain.Status)
	}
}

func TestSequentialGuardsReadSteps(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "",
		scorer("    on_complete:\n"+
			"      - agent: enrich\n"+
			"      - agent: five\n        when: '{{ steps.enrich.data.x == 5 }}'\n"+
			"      - agent: six\n        when: '{{ steps.enrich.data.x == 6 }}'\n"+
			"      - agent: fired\n        when: '{{ when.five and not when.six }}'\n"+
			"      - agent: mail\n"),
		toolAgent("enrich", "{x: `5`}", ""), echoAgent("five"), echoAgent("six"), echoAgent("fired"), echoAgent("mail"))
	_, r := runAgent(t, s, "scorer", "q", map[string]any{"score": 1})
	wantLink(t, r, "enrich", "success", "")
	wantLink(t, r, "five", "success", "")
	wantLink(t, r, "six", "skipped", "condition_false")
	wantLink(t, r, "fired", "success", "")
	wantLink(t, r, "mail", "success", "")
}

// barrier answers// barrier answers only once n calls are in flight at the same time (or fails
// after a timeout): two links can only succeed if they overlap.
func barrier(n int, content string) (reply, *atomic.Int32) {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	var peak atomic.Int32
	var cur atomic.Int32
	return func(int, chatRequest, *http.Request) (int, string) {
		c := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if c <= p || peak.CompareAndSwap(p, c) {
				break
			}
		}
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return http.StatusOK, content
		case <-time.After(3 * time.Second):
			return http.StatusServiceUnavailable, "barrier timeout: the calls did not overlap"
		}
	}, &peak
}

func TestParallelLinksOverlap(t *testing.T) {
	t.Parallel()
	rep, peak := barrier(3, "done")
	f := newFakeLLM(t, map[string]reply{"slow": rep})
	model := "model: {url: '%URL%', name: slow}\n"
	s := mustSet(t, f.url(),
		scorer("    mode: parallel\n    on_complete: [{agent: p1}, {agent: p2}, {agent: p3}]\n"),
		"name: p1\n"+model, "name: p2\n"+model, "name: p3\n"+model)
	start := time.Now()
	res, r := runAgent(t, s, "scorer", "q", map[string]any{"score": 1})
	if res.Status != chain.StatusCompleted {
		t.Fatalf("status %s: %s", res.Status, dumpLinks(r))
	}
	for _, id := range []string{"p1", "p2", "p3"} {
		wantLink(t, r, id, "success", "")
	}
	if peak.Load() != 3 || time.Since(start) > 3*time.Second {
		t.Fatalf("peak concurrency %d after %v", peak.Load(), time.Since(start))
	}
}

func TestSequentialLinksDoNotOverlap(t *testing.T) {
	t.Parallel()
	var cur, peak atomic.Int32
	rep := func(int, chatRequest, *http.Request) (int, string) {
		c := cur.Add(1)
		if c > peak.Load() {
			peak.Store(c)
		}
		// A call that takes time, not a wait: overlapping links would
		// show as a peak above 1.
		time.Sleep(30 * time.Millisecond)
		cur.Add(-1)
		return http.StatusOK, "ok"
	}
	f := newFakeLLM(t, map[string]reply{"m": rep})
	model := "model: {url: '%URL%', name: m}\n"
	s := mustSet(t, f.url(),
		scorer("    on_complete: [{agent: s1}, {agent: s2}, {agent: s3}]\n"),
		"name: s1\n"+model, "name: s2\n"+model, "name: s3\n"+model)
	_, r := runAgent(t, s, "scorer", "q", nil)
	if r.Chain.Status != "completed" || peak.Load() != 1 || f.count("m") != 3 {
		t.Fatalf("status %s peak %d calls %d", r.Chain.Status, peak.Load(), f.count("m"))
	}
}

func TestRetryThenSuccess(t *testing.T) {
	t.Parallel()
	f := newFakeLLM(t, map[string]reply{"flaky": func(n int, _ chatRequest, _ *http.Request) (int, string) {
		if n < 3 {
			return http.StatusInternalServerError, `{"error":"overloaded"}`
		}
		return http.StatusOK, "third time lucky"
	}})
	s := mustSet(t, f.url(),
		scorer("    on_complete:\n      - agent: flaky\n        retry: {max_attempts: 3, backoff: fixed, initial_delay_seconds: 0}\n"),
		"name: flaky\nmodel: {url: '%URL%', name: flaky}\n")
	// The model client's own retries off: this is the link's retry.
	noRetry := ModelClient{Retry: Retry{Attempts: 1}}
	_, r := runAgentOn(t, &Runtime{Set: s, Model: noRetry}, "scorer", "q", nil)
	l := wantLink(t, r, "flaky", "success", "")
	if l.Attempts != 3 || *l.Answer != "third time lucky" || r.Chain.Status != "completed" {
		t.Fatalf("link %+v, chain %s", l, r.Chain.Status)
	}
	// Out of attempts: the error names the status and the body.
	f2 := newFakeLLM(t, map[string]reply{"flaky": func(int, chatRequest, *http.Request) (int, string) {
		return http.StatusBadGateway, `{"error":"upstream down"}`
	}})
	s = mustSet(t, f2.url(),
		scorer("    on_complete:\n      - agent: flaky\n        retry: {max_attempts: 2}\n        on_error: continue\n"),
		"name: flaky\nmodel: {url: '%URL%', name: flaky}\n")
	_, r = runAgentOn(t, &Runtime{Set: s, Model: noRetry}, "scorer", "q", nil)
	l = wantLink(t, r, "flaky", "error", "")
	if !strings.Contains(l.Error, "502 Bad Gateway") || !strings.Contains(l.Error, "upstream down") || l.Attempts != 2 || f2.count("flaky") != 2 {
		t.Fatalf("link %+v", l)
	}
}

func TestTimeoutNamesSeconds(t *testing.T) {
	t.Parallel()
	f := newFakeLLM(t, map[string]reply{"sleepy": func(_ int, _ chatRequest, r *http.Request) (int, string) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return http.StatusOK, "too late"
	}, "quick": say("quick")})
	s := mustSet(t, f.url(),
		scorer("    on_complete:\n      - agent: sleepy\n        timeout_seconds: 0.2\n        on_error: continue\n      - agent: quick\n"),
		"name: sleepy\nmodel: {url: '%URL%', name: sleepy}\n", "name: quick\nmodel: {url: '%URL%', name: quick}\n")
	start := time.Now()
	res, r := runAgent(t, s, "scorer", "q", nil)
	l := wantLink(t, r, "sleepy", "error", "")
	if !strings.Contains(l.Error, "timed out after 0.2s") {
		t.Fatalf("error %q", l.Error)
	}
	wantLink(t, r, "quick", "success", "")
	if res.Status != chain.StatusPartial || r.Chain.Status != "partial" || time.Since(start) > 3*time.Second {
		t.Fatalf("status %s after %v", r.Chain.Status, time.Since(start))
	}
}

func TestOnError(t *testing.T) {
	t.Parallel()
	failing := "name: broken\ntool: fail\ninput: {message: 'CRM is down'}\n"
	failingWithChain := failing + "spec:\n  chain:\n    on_complete: [{agent: child}]\n"
	t.Run("stop", func(t *testing.T) {
		s := mustSet(t, "", scorer("    on_complete: [{agent: broken}, {agent: after}]\n"), failing, echoAgent("after"))
		res, r := runAgent(t, s, "scorer", "q", map[string]any{"score": 4})
		l := wantLink(t, r, "broken", "error", "")
		if !strings.Contains(l.Error, "CRM is down") {
			t.Fatalf("error %q", l.Error)
		}
		wantLink(t, r, "after", "skipped", "upstream_stopped")
		if res.Status != chain.StatusFailed || r.Chain.Status != "failed" {
			t.Fatalf("status %s", r.Chain.Status)
		}
		if r.Result == nil || r.Result["answer"] != `{"score":4}` {
			t.Fatalf("the root answer is returned whatever the chain's status: %+v", r.Result)
		}
	})
	t.Run("continue", func(t *testing.T) {
		s := mustSet(t, "", scorer("    on_complete: [{agent: broken, on_error: continue}, {agent: after}]\n"), failingWithChain, echoAgent("after"), echoAgent("child"))
		res, r := runAgent(t, s, "scorer", "q", nil)
		wantLink(t, r, "broken", "error", "")
		wantLink(t, r, "broken/child", "skipped", "upstream_stopped") // a failed agent's own chain does not fire
		wantLink(t, r, "after", "success", "")
		if res.Status != chain.StatusPartial || r.Chain.Status != "partial" {
			t.Fatalf("status %s", r.Chain.Status)
		}
	})
	t.Run("continue parallel", func(t *testing.T) {
		s := mustSet(t, "", scorer("    mode: parallel\n    on_complete: [{agent: broken, on_error: continue}, {agent: after}]\n"), failing, echoAgent("after"))
		_, r := runAgent(t, s, "scorer", "q", nil)
		wantLink(t, r, "broken", "error", "")
		wantLink(t, r, "after", "success", "")
		if r.Chain.Status != "partial" {
			t.Fatalf("status %s", r.Chain.Status)
		}
	})
	t.Run("jump to agent", func(t *testing.T) {
		s := mustSet(t, "", scorer("    on_complete: [{agent: broken, on_error: triage}, {agent: after}]\n"), failingWithChain,
			echoAgent("after"), echoAgent("child"), toolAgent("triage", "{handled: query, code: context.code}", ""))
		res, r := runAgent(t, s, "scorer", "q", map[string]any{"code": 7})
		wantLink(t, r, "broken", "error", "")
		h := wantLink(t, r, "broken!triage", "success", "")
		if h.HandlerFor != "broken" || !strings.Contains(string(h.Data), "CRM is down") || !strings.Contains(string(h.Data), `"code":7`) {
			t.Fatalf("handler %+v %s", h, h.Data)
		}
		wantLink(t, r, "broken/child", "skipped", "upstream_stopped")
		wantLink(t, r, "after", "success", "")
		if res.Status != chain.StatusPartial || r.Chain.Status != "partial" {
			t.Fatalf("status %s", r.Chain.Status)
		}
	})
	t.Run("handler not needed", func(t *testing.T) {
		s := mustSet(t, "", scorer("    on_complete: [{agent: after, on_error: triage}]\n"), echoAgent("after"), echoAgent("triage"))
		_, r := runAgent(t, s, "scorer", "q", nil)
		wantLink(t, r, "after", "success", "")
		wantLink(t, r, "after!triage", "skipped", "not_needed")
		if r.Chain.Status != "completed" {
			t.Fatalf("status %s", r.Chain.Status)
		}
	})
}

func TestDepthGuardsReadTheirParent(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "",
		scorer("    on_complete:\n      - {agent: b, when: '{{ output.data.score > 7 }}'}\n"),
		toolAgent("b", "{level: `2`}", "    on_complete:\n      - {agent: c, when: '{{ output.data.level == 2 }}'}\n      - {agent: no, when: '{{ output.data.level == 1 }}'}\n      - {agent: strict, when: '{{ output.data.score > 7 }}', on_error: continue}\n"),
		toolAgent("c", "{level: `3`}", "    mode: parallel\n    on_complete:\n      - {agent: d, when: '{{ output.data.level == 3 and trigger.context.score == 9 }}'}\n"),
		echoAgent("d"), echoAgent("no"), echoAgent("strict"))
	res, r := runAgent(t, s, "scorer", "q", map[string]any{"score": 9})
	wantLink(t, r, "b", "success", "")
	wantLink(t, r, "b/c", "success", "")
	d := wantLink(t, r, "b/c/d", "success", "")
	wantLink(t, r, "b/no", "skipped", "condition_false")
	st := wantLink(t, r, "b/strict", "error", "")
	if !strings.Contains(st.Error, `path "output.data.score" does not exist`) {
		t.Fatalf("output at depth 2 is b's result, which has no score: %q", st.Error)
	}
	if d.Depth != 3 || *d.Via != "c" || link(t, r, "b").Via != nil || *link(t, r, "b/c").Via != "b" {
		t.Fatalf("depth/via: %s", dumpLinks(r))
	}
	if res.Status != chain.StatusPartial {
		t.Fatalf("status %s", res.Status)
	}
	// d's query is c's answer (the default input)
	if !strings.Contains(*d.Answer, `{\"level\":3}`) {
		t.Fatalf("d answer %q", *d.Answer)
	}
}

func TestModelAgentStructuredOutput(t *testing.T) {
	t.Parallel()
	f := newFakeLLM(t, map[string]reply{
		"good":  say("Lead qualified 8/10 -- budget confirmed.\n\n```json\n{\"score\": 1}\n```\nActually:\n```json\n{\"score\": 8, \"urgent\": true}\n```\n"),
		"bare":  say(`{"score": 3, "urgent": false}`),
		"prose": say("I think it's a good lead."),
		"wrong": say("```json\n{\"score\": true, \"urgent\": \"yes\"}\n```"),
		"plain": say("Just prose."),
	})
	schema := "spec:\n  output_schema:\n    score: {type: integer}\n    urgent: {type: boolean}\n"
	mk := func(name string) string {
		return "name: " + name + "\nsystem_prompt: You qualify leads.\nprompt: 'Qualify: {{ query }} (budget {{ context.budget }})'\nmodel: {url: '%URL%', name: " + name + ", api_key_env: TEST_AGENT_KEY, temperature: 0}\n" + schema
	}
	s := mustSet(t, f.url(), mk("good"), mk("bare"), mk("prose"), mk("wrong"), "name: plain\nmodel: {url: '%URL%', name: plain}\n")
	// The model client's environment, not the process's: the test runs in
	// parallel with others.
	key := "sk-test"
	rt := &Runtime{Set: s, Model: ModelClient{Providers: testProviders, Getenv: func(name string) string {
		if name == "TEST_AGENT_KEY" {
			return key
		}
		return ""
	}}}

	_, r := runAgentOn(t, rt, "good", "ACME", map[string]any{"budget": 5000})
	if r.Chain != nil || r.Result["answer"] != "Lead qualified 8/10 -- budget confirmed.\n\n```json\n{\"score\": 1}\n```\nActually:\n```json\n{\"score\": 8, \"urgent\": true}\n```\n" {
		t.Fatalf("the answer is never altered: %q", r.Result["answer"])
	}
	if d := r.Result["data"].(map[string]any); d["score"] != float64(8) || d["urgent"] != true || r.Result["data_error"] != nil {
		t.Fatalf("last fenced block: %+v", r.Result)
	}
	req := f.reqs[0]
	if req.Model != "good" || len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != "You qualify leads." ||
		!strings.HasPrefix(req.Messages[1].Content, "Qualify: ACME (budget 5000)") || !strings.Contains(req.Messages[1].Content, "```json") ||
		!strings.Contains(req.Messages[1].Content, `"properties":{"score":{"type":"integer"}`) || req.Temperature == nil || *req.Temperature != 0 {
		t.Fatalf("request: %+v", req)
	}
	if h := f.headers[0].Get("Authorization"); h != "Bearer sk-test" {
		t.Fatalf("authorization %q", h)
	}

	_, r = runAgentOn(t, rt, "bare", "x", nil)
	if d := r.Result["data"].(map[string]any); d["score"] != float64(3) {
		t.Fatalf("bare JSON: %+v", r.Result)
	}
	_, r = runAgentOn(t, rt, "prose", "x", nil)
	if r.Result["data"] != nil || !strings.Contains(r.Result["data_error"].(string), "no ```json block") {
		t.Fatalf("no JSON: %+v", r.Result)
	}
	_, r = runAgentOn(t, rt, "wrong", "x", nil)
	if r.Result["data"] != nil || r.Result["data_error"] != "data does not match output_schema: score: want integer, got boolean true; urgent: want boolean, got string \"yes\"" {
		t.Fatalf("invalid data: %+v", r.Result)
	}
	_, r = runAgentOn(t, rt, "plain", "hello", nil)
	if _, has := r.Result["data"]; has || r.Result["answer"] != "Just prose." {
		t.Fatalf("no schema, no data keys: %+v", r.Result)
	}
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), `"data"`) || !strings.Contains(string(b), `"chain":null`) || !strings.Contains(string(b), `"steps":[]`) {
		t.Fatalf("response: %s", b)
	}
	if last := f.reqs[len(f.reqs)-1]; len(last.Messages) != 1 || last.Messages[0].Content != "hello" {
		t.Fatalf("without prompt or system prompt: %+v", last)
	}

	// The key's variable is not set: a clear error, no request.
	key = ""
	_, r = runAgentOn(t, rt, "good", "x", nil)
	if !strings.Contains(r.Error, "model.api_key_env names TEST_AGENT_KEY, which is not set") {
		t.Fatalf("error %q", r.Error)
	}
}

func TestToolAgentResults(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "",
		"name: words\ntool: transform\ninput: {expression: 'query'}\n",
		"name: words-json\ntool: transform\ninput: {expression: 'query'}\nspec:\n  output_schema:\n    n: {type: integer}\n",
		"name: obj\ntool: transform\ninput: {expression: '{n: context.n}'}\nspec:\n  output_schema: {type: object, required: [n], properties: {n: {type: integer}}}\n",
		"name: raw\ntool: echo\n",
	)
	_, r := runAgent(t, s, "words", "hi there", nil)
	if r.Result["answer"] != "hi there" || len(r.Result) != 1 {
		t.Fatalf("string output is the answer: %+v", r.Result)
	}
	_, r = runAgent(t, s, "words-json", "```json\n{\"n\": 2}\n```", nil)
	if r.Result["data"].(map[string]any)["n"] != float64(2) {
		t.Fatalf("string output is handled like a model answer: %+v", r.Result)
	}
	_, r = runAgent(t, s, "obj", "q", map[string]any{"n": 3})
	if r.Result["answer"] != `{"n":3}` || r.Result["data"].(map[string]any)["n"] != float64(3) || r.Result["data_error"] != nil {
		t.Fatalf("object output is data: %+v", r.Result)
	}
	_, r = runAgent(t, s, "obj", "q", map[string]any{"n": 3.5})
	if r.Result["data"] != nil || r.Result["data_error"] != "data does not match output_schema: n: want integer, got number 3.5" {
		t.Fatalf("object output validated: %+v", r.Result)
	}
	_, r = runAgent(t, s, "raw", "q", map[string]any{"a": 1})
	if d := r.Result["data"].(map[string]any); d["query"] != "q" || d["session_id"] != "sess-1" {
		t.Fatalf("echo: %+v", r.Result)
	}
	if _, has := r.Result["data_error"]; has {
		t.Fatalf("no schema, no data_error: %+v", r.Result)
	}
}

func TestChainAgent(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "", "name: saved\nchain: my-chain\ninput: {extra: 1}\n")
	reg := testRegistry()
	var got map[string]any
	rt := &Runtime{Set: s, Registry: reg, RunChain: func(ctx context.Context, name string, in map[string]any) (any, error) {
		got = in
		return map[string]any{"chain": name}, nil
	}}
	d, _ := s.Get("saved")
	out, err := rt.Invoke(context.Background(), d, RunInput("q", "s", nil), nil)
	if err != nil || out["answer"] != `{"chain":"my-chain"}` || got["extra"] != float64(1) || got["query"] != "q" {
		t.Fatalf("out %+v err %v in %+v", out, err, got)
	}
	// chain: agents that keep running themselves stop.
	var rt2 *Runtime
	rt2 = &Runtime{Set: s, RunChain: func(ctx context.Context, name string, in map[string]any) (any, error) {
		return rt2.Invoke(ctx, d, in, nil)
	}}
	_, err = rt2.Invoke(context.Background(), d, RunInput("q", "s", nil), nil)
	wantErrContains(t, err, "nest more than 8 deep")
}

// Under parallel mode the default link runs as its own step after the links
// that fired (here the unguarded logger), not alongside them.
func TestParallelDefaultRunsAfterTheFanOut(t *testing.T) {
	t.Parallel()
	var loggerEnd, triageStart atomic.Int64
	f := newFakeLLM(t, map[string]reply{
		"log": func(int, chatRequest, *http.Request) (int, string) {
			// A slow logger, not a wait: were the default link run
			// alongside it, triage would start before this ends.
			time.Sleep(40 * time.Millisecond)
			loggerEnd.Store(time.Now().UnixNano())
			return http.StatusOK, "logged"
		},
		"tri": func(int, chatRequest, *http.Request) (int, string) {
			triageStart.Store(time.Now().UnixNano())
			return http.StatusOK, "triaged"
		},
	})
	s := mustSet(t, f.url(),
		scorer("    mode: parallel\n    on_complete:\n"+
			"      - agent: hot\n        when: '{{ output.data.score > 7 }}'\n"+
			"      - agent: logger\n"+
			"      - agent: triage\n        default: true\n"),
		echoAgent("hot"), "name: logger\nmodel: {url: '%URL%', name: log}\n", "name: triage\nmodel: {url: '%URL%', name: tri}\n")
	res, r := runAgent(t, s, "scorer", "q", map[string]any{"score": 1})
	if res.Status != chain.StatusCompleted {
		t.Fatalf("status %s: %s", res.Status, dumpLinks(r))
	}
	wantLink(t, r, "hot", "skipped", "condition_false")
	wantLink(t, r, "logger", "success", "")
	wantLink(t, r, "triage", "success", "")
	if triageStart.Load() < loggerEnd.Load() {
		t.Fatalf("triage started %v before logger finished", time.Duration(loggerEnd.Load()-triageStart.Load()))
	}
}
