package cplog

import (
	"fmt"
	"strconv"
	"time"

	"github.com/chainstudio/studio/engine"
)

// Node entries are 99 % of a run's log: like events (event.go), they are
// written by hand, in the structs' field order and with encoding/json's
// rules, their free-form values (input, output, state, failed, decisions)
// through Marshal. Other entries go through Marshal whole. Tests pin the
// bytes and fail when engine.Checkpoint or engine.NodeRecord gains a field
// (checkpointFields, nodeFields).

var (
	checkpointFields = []string{"run_id", "kind", "event_seq", "time", "start", "node", "pause", "resume", "end", "edges", "slots"}
	nodeFields       = []string{"node_id", "status", "input", "output", "error", "error_code", "reason", "matched", "attempts",
		"iteration", "started", "ended", "state", "fired", "pruned", "held", "handled", "fatal", "partial", "sequential",
		"deferred", "failed", "reused", "pinned", "credentialed", "decisions"}
)

// marshalEntry is MarshalString(cp): node entries by hand, with the output
// taken from the encoding the entry shares with the node's event.
func marshalEntry(cp *engine.Checkpoint) (string, error) {
	if cp.Node == nil || cp.Start != nil || cp.Pause != nil || cp.Resume != nil || cp.End != nil || cp.Edges != nil || cp.Slots != nil {
		return MarshalString(cp)
	}
	buf := bufs.Get().(*bytesBuffer)
	b, err := appendNodeEntry(buf.b[:0], cp)
	return finish(buf, b, err)
}

func appendNodeEntry(b []byte, cp *engine.Checkpoint) ([]byte, error) {
	b = append(b, `{"run_id":`...)
	b = appendString(b, cp.RunID)
	b = append(b, `,"kind":`...)
	b = appendString(b, cp.Kind)
	b = append(b, `,"event_seq":`...)
	b = strconv.AppendInt(b, cp.EventSeq, 10)
	var err error
	if b, err = appendTime(append(b, `,"time":`...), cp.Time); err != nil {
		return nil, err
	}
	n := cp.Node
	b = append(b, `,"node":{"node_id":`...)
	b = appendString(b, n.NodeID)
	b = append(b, `,"status":`...)
	b = appendString(b, string(n.Status))
	if n.Input != nil {
		if b, err = appendJSON(append(b, `,"input":`...), &n.Input); err != nil {
			return nil, err
		}
	}
	if n.Output != nil {
		b = append(b, `,"output":`...)
		if n.OutputJSON != nil {
			out, err := outputJSON(&n.Output, n.OutputJSON)
			if err != nil {
				return nil, err
			}
			b = append(b, out...)
		} else if b, err = appendJSON(b, &n.Output); err != nil {
			return nil, err
		}
	}
	b = appendStringField(b, `,"error":`, n.Error)
	b = appendStringField(b, `,"error_code":`, n.ErrorCode)
	b = appendStringField(b, `,"reason":`, n.Reason)
	b = appendStringField(b, `,"matched":`, n.Matched)
	b = appendIntField(b, `,"attempts":`, n.Attempts)
	b = appendIntField(b, `,"iteration":`, n.Iteration)
	if !n.Started.IsZero() {
		if b, err = appendTime(append(b, `,"started":`...), n.Started); err != nil {
			return nil, err
		}
	}
	if !n.Ended.IsZero() {
		if b, err = appendTime(append(b, `,"ended":`...), n.Ended); err != nil {
			return nil, err
		}
	}
	if len(n.State) > 0 {
		if b, err = appendJSON(append(b, `,"state":`...), &n.State); err != nil {
			return nil, err
		}
	}
	b = appendStrings(b, `,"fired":`, n.Fired)
	b = appendStrings(b, `,"pruned":`, n.Pruned)
	b = appendTrue(b, `,"held":true`, n.Held)
	b = appendStringField(b, `,"handled":`, n.Handled)
	b = appendTrue(b, `,"fatal":true`, n.Fatal)
	b = appendTrue(b, `,"partial":true`, n.Partial)
	b = appendTrue(b, `,"sequential":true`, n.Sequential)
	b = appendStringField(b, `,"deferred":`, n.Deferred)
	if len(n.Failed) > 0 {
		if b, err = appendJSON(append(b, `,"failed":`...), &n.Failed); err != nil {
			return nil, err
		}
	}
	b = appendTrue(b, `,"reused":true`, n.Reused)
	b = appendTrue(b, `,"pinned":true`, n.Pinned)
	b = appendTrue(b, `,"credentialed":true`, n.Credentialed)
	if len(n.Decisions) > 0 {
		if b, err = appendJSON(append(b, `,"decisions":`...), &n.Decisions); err != nil {
			return nil, err
		}
	}
	return append(b, "}}"...), nil
}

// appendTime appends t as encoding/json writes a time.Time (RFC 3339 with
// nanoseconds, quoted; a year outside 0..9999 is an error).
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	return append(b, '"'), nil
}

func appendIntField(b []byte, key string, v int) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(v), 10)
}

func appendTrue(b []byte, field string, v bool) []byte {
	if !v {
		return b
	}
	return append(b, field...)
}

// appendStrings appends a string slice field (omitted when empty).
func appendStrings(b []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(b, key...)
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}
