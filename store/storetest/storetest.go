// Package storetest is the contract every store backend passes: the
// behaviour of chains, versions, runs, events, checkpoint logs and
// housekeeping that the studio relies on, whatever keeps them. A backend's
// own test calls Run with a function that opens an empty backend:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Backend { return openEmpty(t) })
//	}
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/store"
)

// Opener returns a new, empty backend for one test, and closes it when the
// test ends (t.Cleanup).
type Opener func(t *testing.T) store.Backend

// Run runs the whole contract against the backends open returns. The
// subtests are independent (each opens its own backend) and run in parallel.
func Run(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"ErrorCodes", testErrorCodes},
		{"RunInfo", testRunInfo},
		{"ChainLifecycle", testChainLifecycle},
		{"NameVersion", testNameVersion},
		{"Publish", testPublish},
		{"NoOpSave", testNoOpSave},
		{"StaleBaseVersion", testStaleBaseVersion},
		{"ChainsKeysetPaging", testChainsKeysetPaging},
		{"RunsKeysetPaging", testRunsKeysetPaging},
		{"ListRunsPageBothWaysWithStatus", testListRunsPageBothWaysWithStatus},
		{"RunsThatReachedANode", testRunsThatReachedANode},
		{"Events", testEvents},
		{"EventsAfterBytes", testEventsAfterBytes},
		{"EventWriter", testEventWriter},
		{"EventWriterLostRun", testEventWriterLostRun},
		{"EventWriterBuffered", testEventWriterBuffered},
		{"CheckpointRoundTrip", testCheckpointRoundTrip},
		{"EndClearsInterrupts", testEndClearsInterrupts},
		{"ClaimInterruptConcurrent", testClaimInterruptConcurrent},
		{"InterruptsInbox", testInterruptsInbox},
		{"Escalations", testEscalations},
		{"ClaimPauseByID", testClaimPauseByID},
		{"PausesAcrossRestart", testPausesAcrossRestart},
		{"RecoverInterrupted", testRecoverInterrupted},
		{"PruneRuns", testPruneRuns},
		{"EngineRunPersisted", testEngineRunPersisted},
		{"FoldedNodesMatchTheEngine", testFoldedNodesMatchTheEngine},
		{"FoldAcrossResume", testFoldAcrossResume},
		{"Users", testUsers},
		{"LastAdmin", testLastAdmin},
		{"Triggers", testTriggers},
		{"A2ESessionRun", testA2ESessionRun},
		{"ScheduleTickFiresOnce", testScheduleTickFiresOnce},
		{"HookSignatures", testHookSignatures},
		{"Usage", testUsage},
		{"Agents", testAgents},
		{"Credentials", testCredentials},
		{"Budgets", testBudgets},
		{"ChainMCP", testChainMCP},
		{"MCPServers", testMCPServers},
		{"Conversations", testConversations},
		{"ConversationBound", testConversationBound},
		{"ConversationPrune", testConversationPrune},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

// SampleChain is a line of nodes echo tool nodes, with inputs and positions.
func SampleChain(name string, nodes int) *chain.Chain {
	c := &chain.Chain{Name: name, Description: "a test chain"}
	for i := 0; i < nodes; i++ {
		id := fmt.Sprintf("n%d", i)
		c.Nodes = append(c.Nodes, chain.Node{
			ID: id, Kind: chain.KindTool, Name: "echo",
			Input:    map[string]any{"text": "hello " + id, "n": float64(i)},
			Position: &chain.Position{X: float64(i * 10), Y: 5},
		})
		if i > 0 {
			c.Edges = append(c.Edges, chain.Edge{ID: fmt.Sprintf("e%d", i), Source: fmt.Sprintf("n%d", i-1), Target: id})
		}
	}
	return c
}

// JSONEqual fails t when got and want do not encode to the same JSON.
func JSONEqual(t testing.TB, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("mismatch:\n got %s\nwant %s", g, w)
	}
}

// Events are n done events of a run with seqs from, from+1, …
func Events(runID string, from, n int) []engine.Event {
	out := make([]engine.Event, n)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		seq := int64(from + i)
		item := i
		out[i] = engine.Event{RunID: runID, Seq: seq, NodeID: fmt.Sprintf("n%d", i%10), Phase: engine.PhaseDone,
			Output: map[string]any{"v": float64(seq)}, Attempt: 1, Item: &item, Edges: []string{"e1"}, Time: t0.Add(time.Duration(seq) * time.Millisecond)}
	}
	return out
}

// CheckpointLog is a run's log in the batches the engine would append.
func CheckpointLog(runID string) [][]engine.Checkpoint {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	sample := SampleChain("cp chain", 3)
	return [][]engine.Checkpoint{
		{{RunID: runID, Kind: engine.CheckpointStart, Time: t0, Start: &engine.StartRecord{Chain: sample, Input: map[string]any{"q": "x"}}}},
		{
			{RunID: runID, Kind: engine.CheckpointNode, EventSeq: 2, Time: t0.Add(time.Second), Node: &engine.NodeRecord{
				NodeID: "n0", Status: engine.PhaseDone, Input: map[string]any{"text": "a"}, Output: map[string]any{"echo": "a"},
				Attempts: 1, Started: t0, Ended: t0.Add(time.Second), State: map[string]any{"k": "v"}, Fired: []string{"e1"}}},
			{RunID: runID, Kind: engine.CheckpointPause, EventSeq: 3, Time: t0.Add(2 * time.Second), Pause: &engine.PauseRecord{
				NodeID: "n1", Prompt: "approve?", Input: map[string]any{"text": "b"}}},
			{RunID: runID, Kind: engine.CheckpointEnd, EventSeq: 3, Time: t0.Add(2 * time.Second), End: &engine.EndRecord{
				Status: chain.StatusPaused, NodesRun: 1}},
		},
		{{RunID: runID, Kind: engine.CheckpointResume, EventSeq: 3, Time: t0.Add(time.Hour), Resume: &engine.ResumeRecord{
			NodeID: "n1", Value: "yes", HasValue: true}}},
		{
			{RunID: runID, Kind: engine.CheckpointNode, EventSeq: 5, Time: t0.Add(time.Hour + time.Second), Node: &engine.NodeRecord{
				NodeID: "n1", Status: engine.PhaseDone, Output: "yes", Attempts: 1, Started: t0.Add(time.Hour), Ended: t0.Add(time.Hour + time.Second)}},
			{RunID: runID, Kind: engine.CheckpointNode, EventSeq: 7, Time: t0.Add(time.Hour + 2*time.Second), Node: &engine.NodeRecord{
				NodeID: "n2", Status: engine.PhaseError, Error: "boom", ErrorCode: "chain_node_error", Attempts: 3, Reason: "", Fatal: true}},
			{RunID: runID, Kind: engine.CheckpointEnd, EventSeq: 7, Time: t0.Add(time.Hour + 3*time.Second), End: &engine.EndRecord{
				Status: chain.StatusFailed, Error: &engine.RunError{Code: engine.CodeNodeError, Message: "node \"n2\" failed: boom", NodeID: "n2"},
				Final: map[string]any{"last": "yes"}, NodesRun: 3}},
		},
	}
}

// Tools are the tools the engine-backed tests register: echo returns its
// input; delay sleeps input.ms milliseconds and reports which process ran it.
func Tools() *engine.Registry {
	reg := engine.NewRegistry()
	reg.Register("echo", func(ctx context.Context, input map[string]any, emit tool.Emitter) (any, error) {
		return input, nil
	})
	reg.Register("delay", func(ctx context.Context, input map[string]any, emit tool.Emitter) (any, error) {
		ms, _ := input["ms"].(float64)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{"i": input["i"], "pid": float64(os.Getpid())}, nil
	})
	return reg
}

// LinearChain is n tool nodes in a line.
func LinearChain(name, toolName string, n int, input func(i int) map[string]any) *chain.Chain {
	c := &chain.Chain{Name: name, EntryNode: "n0"}
	for i := 0; i < n; i++ {
		c.Nodes = append(c.Nodes, chain.Node{ID: fmt.Sprintf("n%d", i), Kind: chain.KindTool, Name: toolName, Input: input(i)})
		if i > 0 {
			c.Edges = append(c.Edges, chain.Edge{ID: fmt.Sprintf("e%d", i), Source: fmt.Sprintf("n%d", i-1), Target: fmt.Sprintf("n%d", i)})
		}
	}
	return c
}
