package cplog

import (
	"strconv"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine"
)

// A run writes two events per node (start, done), so the event writer
// encodes ~2,000 events for a 1,000-node run: a tenth of the studio's CPU
// through the reflecting encoder. MarshalEvent writes the event's fixed
// fields by hand, in engine.Event's field order and with encoding/json's
// rules (omitempty, HTML escaping), and only its free-form values (output,
// progress, prompt, decisions) through Marshal. Tests pin the bytes against
// encoding/json for every field, and fail when engine.Event gains a field
// this encoder does not write (eventFields).

// eventFields are the JSON names of engine.Event's fields, in order, as
// appendEvent writes them; a test compares them with the struct's tags.
var eventFields = []string{"run_id", "seq", "node_id", "phase", "output", "error", "reason", "matched", "attempts",
	"iteration", "item", "progress", "prompt", "pause_id", "edges", "reused", "pinned", "credentialed", "time", "decisions"}

// MarshalEvent is MarshalString(e): the same bytes as encoding/json. A node
// outcome's output is taken from the encoding it shares with the node's
// checkpoint entry (engine.OutputJSON).
func MarshalEvent(e *engine.Event) (string, error) {
	buf := bufs.Get().(*bytesBuffer)
	b, err := appendEvent(buf.b[:0], e)
	return finish(buf, b, err)
}

func appendEvent(b []byte, e *engine.Event) ([]byte, error) {
	b = append(b, `{"run_id":`...)
	b = appendString(b, e.RunID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"node_id":`...)
	b = appendString(b, e.NodeID)
	b = append(b, `,"phase":`...)
	b = appendString(b, string(e.Phase))
	var err error
	if e.Output != nil {
		b = append(b, `,"output":`...)
		if b, err = appendOutput(b, e); err != nil {
			return nil, err
		}
	}
	b = appendStringField(b, `,"error":`, e.Error)
	b = appendStringField(b, `,"reason":`, e.Reason)
	b = appendStringField(b, `,"matched":`, e.Matched)
	b = appendIntField(b, `,"attempts":`, e.Attempt)
	b = appendIntField(b, `,"iteration":`, e.Iteration)
	if e.Item != nil {
		b = append(b, `,"item":`...)
		b = strconv.AppendInt(b, int64(*e.Item), 10)
	}
	if e.Progress != nil {
		b = append(b, `,"progress":`...)
		if b, err = appendJSON(b, &e.Progress); err != nil {
			return nil, err
		}
	}
	if e.Prompt != nil {
		b = append(b, `,"prompt":`...)
		if b, err = appendJSON(b, &e.Prompt); err != nil {
			return nil, err
		}
	}
	b = appendStringField(b, `,"pause_id":`, e.PauseID)
	b = appendStrings(b, `,"edges":`, e.Edges)
	b = appendTrue(b, `,"reused":true`, e.Reused)
	b = appendTrue(b, `,"pinned":true`, e.Pinned)
	b = appendTrue(b, `,"credentialed":true`, e.Credentialed)
	if b, err = appendTime(append(b, `,"time":`...), e.Time); err != nil {
		return nil, err
	}
	if len(e.Decisions) > 0 {
		b = append(b, `,"decisions":`...)
		if b, err = appendJSON(b, &e.Decisions); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendOutput appends the event's output: the shared encoding when the
// event has one, else the output encoded here.
func appendOutput(b []byte, e *engine.Event) ([]byte, error) {
	if e.OutputJSON != nil {
		out, err := outputJSON(&e.Output, e.OutputJSON)
		if err != nil {
			return nil, err
		}
		return append(b, out...), nil
	}
	return appendJSON(b, &e.Output)
}

// appendJSON appends Marshal(v).
func appendJSON(b []byte, v any) ([]byte, error) {
	out, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

func appendStringField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

// appendString appends s as encoding/json quotes it: printable ASCII other
// than '"', '\\', '<', '>' and '&' as is (ids, phases, most messages);
// anything else through Marshal, which knows the rest of the rules.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			out, _ := Marshal(s) // a string always encodes
			return append(b, out...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
