package enginetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// JSON is v as JSON with <, > and & kept literal, for failure messages.
func JSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// MustDecode decodes a chain document under the default limits, failing t
// when it does not decode.
func MustDecode(t testing.TB, doc string) *chain.Chain {
	t.Helper()
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return c
}

// PlanOf compiles c for e as a host that gives e's registry would: a tool
// the registry lacks, or a static input its schema refuses, is an error.
// An engine with no tools checks the chain rules alone. A chain with
// errors gives a plan that is not Valid (running it records a refused run).
func PlanOf(e *engine.Engine, c *chain.Chain) *chain.Plan {
	var env chain.ValidateOptions
	if reg := e.Registry(); len(reg.Names()) > 0 || len(reg.SourcedTools()) > 0 {
		env = chain.ValidateOptions{Tools: reg.Has, ToolUnavailable: reg.Unavailable, Schemas: reg.NodeSchemas(nil), Check: reg.NodeCheck}
	}
	p, _ := chain.Compile(c, env)
	return p
}
