package agent

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/llm/llmtest"
)

// A provider that answers 429 or 5xx is asked again, with any provider:
// the call succeeds once it answers, and gives up after its attempts with
// the provider's own message and how often it was asked. A 4xx other than
// 429 is the request's fault and is not asked again.
func TestModelCallsRetryRateLimitsAndServerErrors(t *testing.T) {
	t.Parallel()
	quick := Retry{Attempts: 4, Base: time.Millisecond, Max: 10 * time.Millisecond}
	for _, p := range loopProviders {
		t.Run(p.name+"/recovers", func(t *testing.T) {
			t.Parallel()
			f := p.start(t,
				llmtest.Turn{Status: 429, Body: "slow down", Header: map[string]string{"Retry-After": "0"}},
				llmtest.Turn{Status: 503, Body: "overloaded"},
				llmtest.Turn{Text: "at last"})
			rt, def, _ := loopRuntimeAt(t, f.url, providerAgent(p.name))
			rt.Model.Retry = quick
			out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "x"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out["answer"] != "at last" || len(f.requests()) != 3 {
				t.Fatalf("answer %v after %d requests, want the third's", out["answer"], len(f.requests()))
			}
		})
		t.Run(p.name+"/gives up", func(t *testing.T) {
			t.Parallel()
			down := llmtest.Turn{Status: 502, Body: "upstream down"}
			f := p.start(t, down, down, down, down, llmtest.Turn{Text: "never asked"})
			rt, def, _ := loopRuntimeAt(t, f.url, providerAgent(p.name))
			rt.Model.Retry = quick
			_, err := rt.Invoke(context.Background(), def, map[string]any{"query": "x"}, nil)
			if err == nil || !strings.Contains(err.Error(), "upstream down") || !strings.Contains(err.Error(), "answered 502 4 times") {
				t.Fatalf("err %v, want the provider's message and the attempts", err)
			}
			if n := len(f.requests()); n != 4 {
				t.Fatalf("%d requests, want 4", n)
			}
		})
		t.Run(p.name+"/bad request", func(t *testing.T) {
			t.Parallel()
			f := p.start(t, llmtest.Turn{Status: 400, Body: "no such parameter"}, llmtest.Turn{Text: "never asked"})
			rt, def, _ := loopRuntimeAt(t, f.url, providerAgent(p.name))
			rt.Model.Retry = quick
			_, err := rt.Invoke(context.Background(), def, map[string]any{"query": "x"}, nil)
			if err == nil || !strings.Contains(err.Error(), "no such parameter") || len(f.requests()) != 1 {
				t.Fatalf("err %v after %d requests, want one request", err, len(f.requests()))
			}
		})
	}
}

func TestRetryWait(t *testing.T) {
	t.Parallel()
	r := Retry{Base: 100 * time.Millisecond, Max: 5 * time.Second}.orDefaults()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name       string
		n          int
		retryAfter string
		lo, hi     time.Duration
	}{
		{"first backoff", 1, "", 100 * time.Millisecond, 150 * time.Millisecond},
		{"doubled", 3, "", 400 * time.Millisecond, 600 * time.Millisecond},
		{"capped", 40, "", 5 * time.Second, 5 * time.Second},
		{"retry-after seconds", 1, "2", 2 * time.Second, 2 * time.Second},
		{"retry-after date", 1, now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second, 3 * time.Second},
		{"retry-after past the cap", 1, "3600", 5 * time.Second, 5 * time.Second},
		{"retry-after unreadable", 1, "soon", 100 * time.Millisecond, 150 * time.Millisecond},
	} {
		if d := r.wait(c.n, c.retryAfter, now); d < c.lo || d > c.hi {
			t.Errorf("%s: wait %v, want %v..%v", c.name, d, c.lo, c.hi)
		}
	}
}
