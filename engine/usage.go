package engine

import (
	"encoding/json"
	"math"
)

// StepModelUsage is the "step" of the progress event an agent node emits
// after each model call: the tokens the model server reported. The run's
// stored events are the record of every call; stores index them for cost
// (store.UsageStore) and the run page sums them per node.
const StepModelUsage = "model_usage"

// ModelUsage is one model call's token usage.
type ModelUsage struct {
	Agent        string `json:"agent"`
	Model        string `json:"model"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	// Reported is false when the answer carried no usage (the tokens are
	// then unknown, not zero).
	Reported bool `json:"reported"`
}

// Progress is the progress payload of the usage event.
func (u ModelUsage) Progress() map[string]any {
	return map[string]any{"step": StepModelUsage, "agent": u.Agent, "model": u.Model,
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "reported": u.Reported}
}

// UsageOf reads the model usage an event carries: a progress event whose
// payload has step model_usage, as emitted or decoded back from JSON.
func UsageOf(ev *Event) (ModelUsage, bool) {
	if ev.Phase != PhaseProgress {
		return ModelUsage{}, false
	}
	m, ok := ev.Progress.(map[string]any)
	if !ok || m["step"] != StepModelUsage {
		return ModelUsage{}, false
	}
	u := ModelUsage{InputTokens: count(m["input_tokens"]), OutputTokens: count(m["output_tokens"])}
	u.Agent, _ = m["agent"].(string)
	u.Model, _ = m["model"].(string)
	u.Reported, _ = m["reported"].(bool)
	return u, true
}

// count reads a token count of any JSON-ish number type; anything else, a
// negative or a non-integral number is 0.
func count(v any) int64 {
	switch x := v.(type) {
	case int64:
		return max(x, 0)
	case int:
		return int64(max(x, 0))
	case float64:
		if x < 0 || x > math.MaxInt64/2 || x != math.Trunc(x) {
			return 0
		}
		return int64(x)
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return 0
		}
		return max(n, 0)
	}
	return 0
}
