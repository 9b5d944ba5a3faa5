package views

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The steps an agent node reports as progress events (the agent loop's
// model turns, streamed text, tool calls and their results, repairs of a
// reply that failed its schema). model_usage has its own text in
// progressText.
const (
	stepModelCall  = "model_call"
	stepText       = "text"
	stepToolCall   = "tool_call"
	stepToolResult = "tool_result"
	stepRepair     = "repair"
	stepRefused    = "tool_calls_refused" // a turn over max_tool_calls, refused whole
	stepWarning    = "warning"            // the agent answered, but tool calls failed
	stepMemory     = "memory"             // the earlier turns of its conversation the model was sent
)

// stepTextRunes bounds what a step's text quotes of the model's words or of
// an error: the text is a timeline entry and a canvas note, not the answer.
const stepTextRunes = 60

// agentStepText is the short text of an agent step's progress event; false
// when m is not one of the steps above.
func agentStepText(m map[string]any) (string, bool) {
	step, _ := m["step"].(string)
	str := func(k string) string { s, _ := m[k].(string); return s }
	switch step {
	case stepModelCall:
		s := "turn " + intText(m["turn"])
		if model := str("model"); model != "" {
			s += ": " + model
		}
		return s, true
	case stepText:
		return "writing… " + clipText(str("text"), stepTextRunes), true
	case stepToolCall:
		if m["kind"] == "chain" {
			return "calling chain " + str("tool"), true
		}
		return "calling " + str("tool"), true
	case stepToolResult:
		tool := str("tool")
		in := ""
		if ms, ok := number(m["duration_ms"]); ok {
			in = " in " + duration(ms)
		}
		switch st := str("status"); st {
		case "ok":
			return tool + ": ok" + in, true
		case "rejected":
			return tool + ": rejected by a person", true
		case "refused":
			return tool + ": refused: " + clipText(str("error"), stepTextRunes), true
		default:
			if st == "" {
				st = "error"
			}
			s := tool + ": " + st + in
			if e := str("error"); e != "" {
				s += ": " + clipText(e, stepTextRunes)
			}
			return s, true
		}
	case stepRefused:
		return "turn " + intText(m["turn"]) + ": " + intText(m["calls"]) + " tool calls refused, " + intText(m["left"]) + " left of max_tool_calls", true
	case stepWarning:
		// The node's last event, so its note on the canvas: said whole.
		return "⚠ " + str("text"), true
	case stepMemory:
		s := "memory " + clipText(str("session"), stepTextRunes) + ": " + intText(m["included"]) + " earlier turns sent"
		if d, ok := number(m["dropped"]); ok && d > 0 {
			s += ", " + intText(d) + " older left out"
		}
		return s, true
	case stepRepair:
		return "repair " + intText(m["attempt"]) + " of " + intText(m["of"]) + ": " + clipText(str("error"), stepTextRunes), true
	}
	return "", false
}

// number reads a JSON-ish number: float64 when decoded from JSON, an
// integer type when the event is still the one the node emitted.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// intText writes a count such as a turn number ("?" when it is missing).
func intText(v any) string {
	f, ok := number(v)
	if !ok {
		return "?"
	}
	return strconv.FormatFloat(math.Trunc(f), 'f', -1, 64)
}

// clipText is s on one line (runs of white space become one space), cut to
// n runes with an ellipsis.
func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n]), " ") + "…"
}

// toolCallsWarning is what an agent node's output says of its tool calls
// that failed or were refused ("2 of 5 tool calls failed"), "" when none
// did or the output is not an agent's: the node is done, and its drawer
// says so beside the phase.
func toolCallsWarning(output any) string {
	m, ok := output.(map[string]any)
	if !ok {
		return ""
	}
	var said []string
	if failed, ok := number(m["tool_calls_failed"]); ok && failed > 0 {
		calls, _ := m["tool_calls"].([]any)
		said = append(said, intText(failed)+" of "+strconv.Itoa(len(calls))+" tool calls failed")
	}
	if refused, ok := number(m["tool_calls_refused"]); ok && refused > 0 {
		said = append(said, intText(refused)+" tool calls refused over max_tool_calls")
	}
	return strings.Join(said, "; ")
}
