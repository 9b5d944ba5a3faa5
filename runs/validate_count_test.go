package runs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/store"
)

// countingFixture is a fixture whose echo tool counts the validations of
// its nodes (a tool's static input check runs once per validation), with
// a clock the test moves.
func countingFixture(t *testing.T) (*fixture, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var checks, clock atomic.Int64
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := newFixtureWith(t, func(o *Options) {
		o.Registry.SetCheck("echo", func(map[string]any) []tool.Problem { checks.Add(1); return nil })
		o.Now = func() time.Time { return t0.Add(time.Duration(clock.Load())) }
	})
	return f, &checks, &clock
}

// startChecked starts version v of a one-node chain from a fresh copy of
// its document (as the store hands out), checked first by the transport.
func startChecked(t *testing.T, f *fixture, v int) {
	t.Helper()
	doc := chainOf(t, `{"name":"one","nodes":[{"node_id":"a","kind":"tool","name":"echo","input":{"x":1}}]}`)
	ch := &store.Chain{ID: "c1", Version: v, Name: "one", Doc: doc}
	if err := f.svc.CheckRun(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Start(context.Background(), ch, nil); err != nil {
		t.Fatal(err)
	}
	if res := f.end(t); res.Status != chain.StatusCompleted {
		t.Fatalf("status %s, want completed", res.Status)
	}
}

// A run's chain is checked once: the transport's check, Start's and the
// engine's share one plan.
func TestRunValidatesOnce(t *testing.T) {
	t.Parallel()
	f, checks, _ := countingFixture(t)
	startChecked(t, f, 1)
	if n := checks.Load(); n != 1 {
		t.Fatalf("%d validations for one run, want 1", n)
	}
}

// Runs of one saved version in a burst share its plan; a moment later, or
// another version, is checked again (credentials, tools and sub-chains may
// have changed without a new version).
func TestRunsOfOneVersionShareAPlan(t *testing.T) {
	t.Parallel()
	f, checks, clock := countingFixture(t)
	for range 3 {
		startChecked(t, f, 1)
	}
	if n := checks.Load(); n != 1 {
		t.Fatalf("%d validations for 3 runs of one version, want 1", n)
	}
	startChecked(t, f, 2)
	if n := checks.Load(); n != 2 {
		t.Fatalf("%d validations after another version ran, want 2", n)
	}
	clock.Add(int64(planMemoAge))
	startChecked(t, f, 1)
	if n := checks.Load(); n != 3 {
		t.Fatalf("%d validations after the plan aged, want 3", n)
	}
}
