package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/engine/spend"
)

// Ten calls at once against a budget that fits three: exactly three reach
// the model (never four), the others fail with budget_exceeded before any
// request; once the three settle to what they used, a call fits again.
func TestBudgetHoldsParallelCalls(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	turns := make([]llmtest.Turn, 4)
	for i := range turns {
		turns[i] = llmtest.Turn{Text: "ok", Hold: release}
	}
	f := llmtest.NewOpenAI(t, turns...)
	s, err := NewSet(nil, LoadOptions{Providers: testProviders})
	if err != nil {
		t.Fatal(err)
	}
	rt := &Runtime{Set: s, Registry: testRegistry()}
	// streamed: the fake holds a streamed answer open until release
	nd := definedNode(map[string]any{"model": map[string]any{"url": f.URL + "/v1", "name": "m", "max_tokens": 1000.0}})
	// each call's worst case is its input (a few dozen tokens) and 1000 out
	run := spend.NewAccount("this run's budget", spend.Flags{Tokens: "--budget-run-tokens"}, spend.Limit{Tokens: 3500})
	ctx := spend.WithAccounts(context.Background(), run)

	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := rt.RunNode(ctx, nd, map[string]any{"query": "hi"}, nil)
			errs <- err
		}()
	}
	var refused []error
	for len(refused) < 7 {
		err := <-errs
		if err == nil {
			t.Fatal("a call finished while the model held every answer")
		}
		refused = append(refused, err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a held call failed: %v", err)
		}
	}
	if n := len(f.Requests()); n != 3 {
		t.Fatalf("the model got %d requests, want 3", n)
	}
	for _, err := range refused {
		var ex *spend.ExceededError
		if !errors.As(err, &ex) || engine.CodeOf(err) != spend.CodeExceeded || !strings.Contains(err.Error(), "this run's budget is 3500 tokens") {
			t.Fatalf("refused with %v", err)
		}
	}
	// settled to what the fake reported (a few dozen tokens a call), not
	// to the worst cases (over 1000 each); nothing is left reserved
	if spent, reserved, _ := run.State(); spent.Tokens <= 0 || spent.Tokens >= 300 || spent.Tokens%3 != 0 || reserved.Tokens != 0 {
		t.Fatalf("spent %d reserved %d, want three calls' reported usage and 0", spent.Tokens, reserved.Tokens)
	}
	if _, err := rt.RunNode(ctx, nd, map[string]any{"query": "hi"}, nil); err != nil {
		t.Fatalf("after the three settled: %v", err)
	}
}

// A budget in cost needs the model's price: without one the call is not
// made; with one, the worst case is priced and a call over it refused.
func TestBudgetInCost(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t, llmtest.Turn{Text: "ok"})
	s, _ := NewSet(nil, LoadOptions{Providers: testProviders})
	prices, err := pricing.Parse([]byte("m: {input: 1, output: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	nd := definedNode(map[string]any{"model": map[string]any{"url": f.URL + "/v1", "name": "m", "max_tokens": 1000.0, "stream": false}})
	day := spend.NewAccount("the studio's daily budget", spend.Flags{Cost: "--budget-day-cost"}, spend.Limit{Cost: 0.01})
	ctx := spend.WithAccounts(context.Background(), day)

	unpriced := &Runtime{Set: s, Registry: testRegistry()}
	if _, err := unpriced.RunNode(ctx, nd, map[string]any{"query": "hi"}, nil); engine.CodeOf(err) != spend.CodeExceeded || !strings.Contains(err.Error(), "model m has no price") {
		t.Fatalf("unpriced: %v", err)
	}
	// 1000 out at 2 a million is 0.002, and the input a little more: fits 0.01
	priced := &Runtime{Set: s, Registry: testRegistry(), Model: ModelClient{Prices: prices}}
	if _, err := priced.RunNode(ctx, nd, map[string]any{"query": "hi"}, nil); err != nil {
		t.Fatalf("priced: %v", err)
	}
	tight := spend.NewAccount("this run's budget", spend.Flags{Cost: "--budget-run-cost"}, spend.Limit{Cost: 0.001})
	if _, err := priced.RunNode(spend.WithAccounts(context.Background(), tight), nd, map[string]any{"query": "hi"}, nil); engine.CodeOf(err) != spend.CodeExceeded {
		t.Fatalf("over a cost budget: %v", err)
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}
