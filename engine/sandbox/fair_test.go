//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
)

// queued waits until n calls of run key wait for a place.
func queued(t *testing.T, s *sched, key string, n int) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := s.waitingOf(key); got < n {
			return fmt.Errorf("%d calls of %s waiting, want %d", got, key, n)
		}
		return nil
	})
}

// Runs waiting for places take turns: a run that queued three calls
// before another queued one gets one place, then the other run gets the
// next, not after all three.
func TestSchedRunsTakeTurns(t *testing.T) {
	s := newSched(Limits{Workers: 1, RunConcurrency: 16, MaxQueue: 8, CPUSeconds: 1, RunCPUSeconds: -1}.WithDefaults())
	ctx := context.Background()
	g, err := s.acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	s.release(g, time.Millisecond, true) // a's calls are short: it may fill the child
	held := make([]grant, 0, pipelineDepth)
	for range pipelineDepth {
		g, err := s.acquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, g)
	}
	got := make(chan string, 4)
	for range 3 {
		go func() {
			g, err := s.acquire(ctx, "a")
			if err == nil {
				got <- "a"
				s.release(g, time.Millisecond, true)
			}
		}()
	}
	queued(t, s, "a", 3)
	go func() {
		g, err := s.acquire(ctx, "b")
		if err == nil {
			got <- "b"
			s.release(g, time.Millisecond, true)
		}
	}()
	queued(t, s, "b", 1)
	s.release(held[0], time.Millisecond, true)
	if first := <-got; first != "a" {
		t.Fatalf("the first place went to %s", first)
	}
	if second := <-got; second != "b" {
		t.Fatalf("the second place went to %s, after a's calls", second)
	}
}

// A run whose calls are long has one place per worker: its third call
// waits while another run's call gets a place at once.
func TestSchedLongCallsOnePerWorker(t *testing.T) {
	s := newSched(Limits{Workers: 2, MaxQueue: 8, CPUSeconds: 1}.WithDefaults())
	for range 2 {
		if _, err := s.acquire(context.Background(), "slow"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	third := make(chan error, 1)
	go func() {
		_, err := s.acquire(ctx, "slow")
		third <- err
	}()
	queued(t, s, "slow", 1)
	if _, err := s.acquire(context.Background(), "other"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-third; !errors.Is(err, context.Canceled) {
		t.Fatalf("the third long call: %v, want it to have waited until cancelled", err)
	}
	if n := s.waitingOf("slow"); n != 0 {
		t.Fatalf("%d calls still waiting after the cancel", n)
	}
}
