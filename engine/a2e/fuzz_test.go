package a2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// a2eLinearRequest is A2E's "Simple Linear Chain" wire example, verbatim.
const a2eLinearRequest = `{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"read_file","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"skill","name":"text_summarizer","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}`

// FuzzA2EMessage: the A2E wire decoder never panics and returns only
// *DecodeError; a chain/req it accepts exports back to A2E (when
// expressible) losslessly; and the chain/event and chain/resp messages built
// from what the request carries marshal to JSON with every seed-000 field
// present, which decodes back to the same message.
//
//	go test ./engine/a2e -run '^$' -fuzz '^FuzzA2EMessage$' -fuzztime 3m
func FuzzA2EMessage(f *testing.F) {
	for _, s := range []string{
		a2eLinearRequest,
		`{"type":"chain/req","id":"r","chain_id":"x","initial_input":{"a":[1,2,{"b":null}]},"nodes":[{"node_id":"a","kind":"tool","name":"echo","next_node":"b"},{"node_id":"b","kind":"branch","condition":"input.a","true_node":"c","false_node":"d"},{"node_id":"c","kind":"tool"},{"node_id":"d","kind":"tool"}],"streaming":false,"timeout":0.5}`,
		`{"type":"chain/req","nodes":[{"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},{"node_id":"body","kind":"tool","name":"echo"}]}`,
		`{"type":"chain/req","version":"2.0","nodes":[{"node_id":"a","kind":"tool"}]}`,
		`{"type":"chain/resp","nodes":[]}`,
		`{"type":"chain/req","nodes":[]}`,
		`{"type":"chain/req","nodes":[{"node_id":"a","kind":"tool","input":{"s":"\u003cscript\u003e","n":-0,"f":1e308}}],"initial_input":{"x":"\ud800"}}`,
		`{"type":null,"nodes":[]}`,
		`{"type":"chain/req","timeout":-1,"nodes":[{"node_id":"a","kind":"tool"}]}`,
	} {
		f.Add([]byte(s), uint8(0), uint8(0))
	}
	phases := []engine.Phase{engine.PhaseStart, engine.PhaseDone, engine.PhaseError, engine.PhaseSkip, engine.PhasePaused, engine.PhaseProgress}
	statuses := []chain.RunStatus{chain.StatusCompleted, chain.StatusPartial, chain.StatusFailed, chain.StatusPaused, chain.StatusCancelled, chain.StatusTimedOut}
	small := chain.Limits{MaxNodes: 32, MaxEdges: 64, MaxIDLength: 16, MaxExpressionLength: 64, MaxDocumentBytes: 1 << 16}
	f.Fuzz(func(t *testing.T, data []byte, phase, status uint8) {
		for _, lim := range []chain.Limits{small, {}} {
			c, req, err := chain.DecodeDocument(data, lim)
			if err != nil {
				var de *chain.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("error is %T, not *DecodeError: %v", err, err)
				}
				continue
			}
			if req == nil {
				continue // a studio document: FuzzDecode's job
			}
			if req.Type != chain.TypeRequest || req.ID == "" || req.Version != chain.WireVersion || req.ChainID == "" || c.Name != req.ChainID {
				t.Fatalf("decoded request not filled in: %+v (chain %q)", req, c.Name)
			}
			// Export back to A2E and decode again: the same chain.
			if exp, err := Export(c); err == nil {
				b, err := json.Marshal(exp)
				if err != nil {
					t.Fatalf("marshal export: %v", err)
				}
				c2, req2, err := chain.DecodeDocument(b, lim)
				if err != nil {
					t.Fatalf("re-decode of the export %s: %v", b, err)
				}
				if req2 == nil || !reflect.DeepEqual(c.Clone(), c2.Clone()) {
					t.Fatalf("A2E export round trip changed the chain:\n%s", b)
				}
			}
			var output any = req.InitialInput
			node := ""
			if len(c.Nodes) > 0 {
				node = c.Nodes[0].ID
				output = map[string]any{"input": c.Nodes[0].Input, "initial": req.InitialInput}
			}
			ev := engine.Event{RunID: "run", Seq: int64(len(data)), NodeID: node, Phase: phases[int(phase)%len(phases)],
				Output: output, Progress: output, Prompt: output, Error: string(data[:min(len(data), 64)]),
				Time: time.Unix(1716123456, 789_000_000)}
			em := NewEventMessage(req.ID, ev)
			wireRoundTrip(t, em, &EventMessage{}, []string{"type", "id", "version", "ts", "req_id", "node_id", "phase", "output", "error", "seq", "data"})
			if em.Type != TypeEvent || em.ReqID != req.ID || em.Seq != ev.Seq || em.NodeID != node {
				t.Fatalf("event message %+v", em)
			}
			res := &engine.Result{RunID: "run", Status: statuses[int(status)%len(statuses)], Outputs: map[string]any{node: output},
				FinalOutput: output, NodesRun: len(c.Nodes), DurationMS: int64(len(data))}
			if res.Status == chain.StatusFailed {
				res.Error = &engine.RunError{Code: engine.CodeNodeError, Message: string(data[:min(len(data), 64)]), NodeID: node}
			}
			if res.Status == chain.StatusPaused {
				res.Pending = []engine.Pending{{NodeID: node}}
			}
			rm := NewResponseMessage(req, res)
			wireRoundTrip(t, rm, &ResponseMessage{}, []string{"type", "id", "version", "ts", "req_id", "chain_id", "success", "outputs", "final_output", "duration_ms", "nodes_run", "error"})
			if rm.ChainID != req.ChainID || rm.ReqID != req.ID || rm.Success != (res.Status == chain.StatusCompleted) {
				t.Fatalf("response message %+v for %s", rm, res.Status)
			}
			if rm.Success != (rm.Error == nil) {
				t.Fatalf("success %v with error %+v", rm.Success, rm.Error)
			}
			// A request that never ran still answers with every field.
			wireRoundTrip(t, NewResponseMessage(req, nil), &ResponseMessage{}, nil)
		}
	})
}

// wireRoundTrip marshals m, checks that the JSON has exactly the fields
// keys (when given), decodes it into into and marshals that again: the two
// encodings must be equal.
func wireRoundTrip(t *testing.T, m any, into any, keys []string) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		// Only a value JSON cannot carry may fail; decoded input never holds one.
		t.Fatalf("marshal %T: %v", m, err)
	}
	if keys != nil {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		got := make([]string, 0, len(fields))
		for k := range fields {
			got = append(got, k)
		}
		sort.Strings(got)
		want := append([]string(nil), keys...)
		sort.Strings(want)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%T fields %v, want %v", m, got, want)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	b2, err := json.Marshal(into)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("%T round trip changed the message:\n%s\n%s", m, b, b2)
	}
}
