package chaintest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
)

func TestRunTraceGivesEachNodesOutput(t *testing.T) {
	c, err := chain.Decode([]byte(`{"name":"tr","nodes":[
	 {"node_id":"fetch","kind":"tool","name":"http"},
	 {"node_id":"pick","kind":"tool","name":"echo"}],
	 "edges":[{"source":"fetch","target":"pick"}],
	 "tests":[{"name":"t","input":{"q":1},"mocks":{"fetch":{"score":3}},"assert":{}}]}`), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	tr, err := chaintest.RunTrace(context.Background(), c, chaintest.Options{Registry: registry(&calls)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Test != "t" || tr.Input["q"] != float64(1) || tr.Outputs["fetch"].(map[string]any)["score"] != float64(3) || tr.Outputs["pick"] == nil || calls.Load() != 0 {
		t.Errorf("trace = %+v", tr)
	}
	if _, err := chaintest.RunTrace(context.Background(), c, chaintest.Options{}, 1); !errors.Is(err, chaintest.ErrNoTest) {
		t.Errorf("test 1 of 1: %v", err)
	}
}
