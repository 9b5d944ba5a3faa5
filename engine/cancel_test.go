package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
)

// A cancelled run ends cancelled, even when the coordinator reads the
// cancelled tool's error before it notices the run's own context: the
// node's error followed from the stop, it is not a failure of the chain.
func TestCancelledRunIsCancelledNotFailed(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	reg := engine.NewRegistry()
	reg.Register("wait", func(ctx context.Context, _ map[string]any, _ tool.Emitter) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	eng := engine.New(engine.Options{Registry: reg, Checkpointer: engine.NewMemoryCheckpointer()})
	doc := &chain.Chain{Name: "c", Nodes: []chain.Node{{ID: "w", Kind: chain.KindTool, Name: "wait"}}}
	for i := 0; i < 50; i++ {
		ctx, cancel := context.WithCancelCause(context.Background())
		go func() { <-started; cancel(errors.New("cancelled by a user")) }()
		res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), nil, engine.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != chain.StatusCancelled {
			t.Fatalf("run %d: status %s (%+v), want cancelled", i, res.Status, res.Error)
		}
	}
}

// The same when the stop lands while the coordinator itself is building a
// node's input: the expression stops at the cancellation and the run reads
// as cancelled, not as a failed expression.
func TestCancelWhileBuildingInputIsCancelled(t *testing.T) {
	t.Parallel()
	blowUp := "@"
	for k := 0; k < 21; k++ { // 2^21 elements: inside the budget, long enough to be stopped
		blowUp += " | [@,@]"
	}
	doc := &chain.Chain{Name: "c", Nodes: []chain.Node{{ID: "big", Kind: chain.KindTool, Name: "echo", InputMap: map[string]string{"x": blowUp}}}}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	reg := engine.NewRegistry()
	reg.Register("echo", func(_ context.Context, in map[string]any, _ tool.Emitter) (any, error) { return in, nil })
	eng := engine.New(engine.Options{Registry: reg, Checkpointer: engine.NewMemoryCheckpointer(),
		Sink: engine.SinkFunc(func(ev engine.Event) {
			if ev.Phase == engine.PhaseStart { // emitted just before the input is built
				cancel(errors.New("cancelled by a user"))
			}
		})})
	res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), map[string]any{"a": 1.0}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != chain.StatusCancelled {
		t.Fatalf("status %s (%+v), want cancelled", res.Status, res.Error)
	}
}
