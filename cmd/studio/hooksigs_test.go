package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
)

type countingPrune struct {
	store.Housekeeping
	calls atomic.Int32
}

func (c *countingPrune) PruneHookSignatures(context.Context, time.Time) (int, error) {
	c.calls.Add(1)
	return 1, nil
}

// The serve process prunes expired webhook signatures every period and
// stops when its context ends.
func TestPruneHookSignaturesLoop(t *testing.T) {
	t.Parallel()
	db := &countingPrune{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		pruneHookSignatures(ctx, db, time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := db.calls.Load(); n < 2 {
			return fmt.Errorf("%d prunes", n)
		}
		return nil
	})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the prune loop did not stop with its context")
	}
}
