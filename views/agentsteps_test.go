package views

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// Every agent step has a short text for the timeline and the canvas note,
// whether the payload is the one the node emitted (integer counts) or one
// decoded back from the store (float64); a usage event keeps its text.
func TestAgentStepTexts(t *testing.T) {
	long := "The weather in Paris is mild today, with a light breeze from the west and clouds later on."
	for _, c := range []struct {
		payload string
		want    string
	}{
		{`{"step":"model_call","agent":"a","model":"gpt-4o","provider":"openai","turn":2}`, "turn 2: gpt-4o"},
		{`{"step":"text","agent":"a","turn":1,"text":"Hello\n\n  there"}`, "writing… Hello there"},
		{`{"step":"text","agent":"a","turn":1,"text":"` + long + `"}`, "writing… The weather in Paris is mild today, with a light breeze from…"},
		{`{"step":"tool_call","agent":"a","turn":1,"call_id":"c1","tool":"get_weather","kind":"tool","input":{"city":"Paris"}}`, "calling get_weather"},
		{`{"step":"tool_call","agent":"a","turn":1,"call_id":"c1","tool":"enrich","kind":"chain","input":{}}`, "calling chain enrich"},
		{`{"step":"tool_result","agent":"a","turn":1,"call_id":"c1","tool":"get_weather","status":"ok","output":{"t":12},"duration_ms":12}`, "get_weather: ok in 12 ms"},
		{`{"step":"tool_result","agent":"a","turn":1,"call_id":"c1","tool":"get_weather","status":"error","error":"timeout after 30 s","duration_ms":30000}`, "get_weather: error in 30.0 s: timeout after 30 s"},
		{`{"step":"tool_result","agent":"a","turn":1,"call_id":"c1","tool":"get_weather","status":"rejected","duration_ms":0}`, "get_weather: rejected by a person"},
		{`{"step":"tool_result","agent":"a","turn":3,"call_id":"c9","tool":"nope","status":"refused","error":"unknown tool"}`, "nope: refused: unknown tool"},
		{`{"step":"repair","agent":"a","attempt":1,"of":2,"error":"data.score: want integer"}`, "repair 1 of 2: data.score: want integer"},
		{`{"step":"model_usage","agent":"a","model":"m","input_tokens":12,"output_tokens":30,"reported":true,"turn":1}`, "m: 12 in, 30 out tokens"},
		{`{"step":"tool_calls_refused","agent":"a","turn":2,"calls":5000,"tools":["echo"],"left":3,"max_tool_calls":32,"error":"You asked for 5000 tool calls"}`, "turn 2: 5000 tool calls refused, 3 left of max_tool_calls"},
		{`{"step":"warning","agent":"a","text":"2 of 5 tool calls failed","failed":2,"calls":5}`, "⚠ 2 of 5 tool calls failed"},
		{`{"done":1,"total":3}`, "1/3"},
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(c.payload), &m); err != nil {
			t.Fatal(err)
		}
		if got := progressText(m); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.payload, got, c.want)
		}
	}
	emitted := map[string]any{"step": "tool_result", "tool": "echo", "status": "ok", "duration_ms": int64(3)}
	if got := progressText(emitted); got != "echo: ok in 3 ms" {
		t.Errorf("an emitted payload: %q", got)
	}
	if got := progressText(map[string]any{"step": "model_call"}); got != "turn ?" {
		t.Errorf("no turn: %q", got)
	}
}

// A piece of streamed text is a hidden timeline entry (it keeps its seq
// and note); a tool step is a visible one.
func TestStreamedTextIsAHiddenTimelineEntry(t *testing.T) {
	events := []engine.Event{
		{Seq: 7, NodeID: "ask", Phase: engine.PhaseProgress, Progress: map[string]any{"step": "text", "agent": "a", "turn": 1, "text": "Hello"}},
		{Seq: 8, NodeID: "ask", Phase: engine.PhaseProgress, Progress: map[string]any{"step": "tool_call", "agent": "a", "turn": 1, "tool": "echo", "call_id": "c1"}},
	}
	var b strings.Builder
	if err := TimelineItems(events, nil, false).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	text, tool, _ := strings.Cut(html, `data-seq="8"`)
	if !strings.Contains(text, `data-seq="7"`) || !strings.Contains(text, "ev-text") || !strings.Contains(text, " hidden") || !strings.Contains(text, `data-progress="writing… Hello"`) {
		t.Fatalf("the text entry: %s", text)
	}
	if strings.Contains(tool, "hidden") || strings.Contains(tool, "ev-text") {
		t.Fatalf("the tool entry is hidden: %s", tool)
	}
}

// A code node's log event reads as its lines in the timeline, not as JSON.
func TestProgressTextCodeLog(t *testing.T) {
	got := progressText(map[string]any{"step": "log", "lines": []any{"hello Ada", `{"n":1}`}, "dropped": 3.0})
	if want := `log: hello Ada ⏎ {"n":1} (3 more lines dropped)`; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

// The drawer of an agent node whose calls failed says how many, whether
// the output is the node's own (int counts) or read back from the store.
func TestToolCallsWarning(t *testing.T) {
	for _, c := range []struct {
		output any
		want   string
	}{
		{map[string]any{"answer": "ok", "tool_calls": []any{1, 2, 3, 4, 5}, "tool_calls_failed": 2}, "2 of 5 tool calls failed"},
		{map[string]any{"answer": "ok", "tool_calls": []any{1}, "tool_calls_failed": 1.0, "tool_calls_refused": 40.0}, "1 of 1 tool calls failed; 40 tool calls refused over max_tool_calls"},
		{map[string]any{"answer": "ok", "tool_calls": []any{1}}, ""},
		{"just text", ""},
		{nil, ""},
	} {
		if got := toolCallsWarning(c.output); got != c.want {
			t.Errorf("%v: %q, want %q", c.output, got, c.want)
		}
	}
}

// The drawer of an agent node that is done says its failed calls beside
// the phase.
func TestNodeDrawerSaysFailedToolCalls(t *testing.T) {
	d := DrawerData{Run: &store.Run{ID: "r1"}, NodeID: "ask", Kind: "agent", Result: &engine.NodeResult{Status: engine.PhaseDone,
		Output: map[string]any{"answer": "ok", "tool_calls": []any{map[string]any{}, map[string]any{}}, "tool_calls_failed": 1.0}}}
	var b strings.Builder
	if err := NodeDrawer(d).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<dd id="drawer-tool-calls" class="warning-text">1 of 2 tool calls failed</dd>`) {
		t.Fatalf("the drawer does not say the failed calls:\n%s", b.String())
	}
}
