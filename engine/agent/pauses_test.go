package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// An agent chain whose two parallel links are interrupt agents pauses at
// both; each is answered on its own by its pause id (the link's node id),
// and the chain completes after the second answer.
func TestAgentChainPausesPerLink(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "",
		scorer("    mode: parallel\n    on_complete: [{agent: ask1}, {agent: ask2}]\n"),
		"name: ask1\ntool: interrupt\ninput: {prompt: 'first?'}\n",
		"name: ask2\ntool: interrupt\ninput: {prompt: 'second?'}\n")
	reg := testRegistry()
	rt := &Runtime{Set: s, Registry: reg}
	eng := engine.New(engine.Options{Registry: reg, Agent: rt.RunNode})
	c, _ := s.RunChain("scorer")
	ctx := context.Background()
	res, err := eng.Run(ctx, enginetest.PlanOf(eng, c), RunInput("q", "sess-1", map[string]any{"score": 1}), engine.RunOptions{})
	if err != nil || res.Status != chain.StatusPaused || len(res.Pending) != 2 {
		t.Fatalf("run: %v %+v", err, res)
	}
	ids := map[string]any{}
	for _, p := range res.Pending {
		ids[p.PauseID] = p.Prompt
	}
	if ids["ask1"] != "first?" || ids["ask2"] != "second?" {
		t.Fatalf("pending %+v", res.Pending)
	}
	r2, err := eng.Resume(ctx, res.RunID, &engine.ResumeValue{Value: "two"}, nil, engine.ResumeOptions{PauseID: "ask2"})
	if err != nil || r2.Status != chain.StatusPaused || len(r2.Pending) != 1 || r2.Pending[0].PauseID != "ask1" {
		t.Fatalf("after ask2: %v %+v", err, r2)
	}
	if _, err := eng.Resume(ctx, res.RunID, &engine.ResumeValue{Value: "again"}, nil, engine.ResumeOptions{PauseID: "ask2"}); err == nil {
		t.Fatal("a second answer to ask2 was accepted")
	}
	r3, err := eng.Resume(ctx, res.RunID, &engine.ResumeValue{Value: "one"}, nil, engine.ResumeOptions{PauseID: "ask1"})
	if err != nil || r3.Status != chain.StatusCompleted {
		t.Fatalf("after ask1: %v %+v", err, r3)
	}
	if a, b := fmt.Sprint(r3.Outputs["ask1"]), fmt.Sprint(r3.Outputs["ask2"]); !strings.Contains(a, "one") || !strings.Contains(b, "two") {
		t.Fatalf("outputs ask1 %s ask2 %s", a, b)
	}
}
