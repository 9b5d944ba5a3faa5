package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecode: Decode never panics, every error it returns is a *DecodeError,
// and a chain it accepts marshals to JSON that decodes again to the same chain.
func FuzzDecode(f *testing.F) {
	files, err := filepath.Glob("../../examples/*.json")
	if err != nil {
		f.Fatal(err)
	}
	if len(files) == 0 {
		f.Fatal("no examples/*.json to seed the corpus")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		a2eLinearRequest,
		`{"type":"chain/req","nodes":[{"node_id":"check","kind":"branch","condition":"length(output.items) > ` + "`0`" + `","true_node":"process","false_node":"skip_log"},{"node_id":"process","kind":"tool"},{"node_id":"skip_log","kind":"tool"}]}`,
		`{"type":"chain/req","entry_node":"batch","nodes":[{"node_id":"batch","kind":"map","items_path":"input.files","map_node":"process_file"},{"node_id":"process_file","kind":"tool","next_node":"process_file"}],"timeout":1.5,"streaming":false}`,
		`{"nodes":[{"node_id":"a","kind":"tool","next_node":"b","retry":{"max_attempts":2,"backoff":"exponential"}},{"node_id":"b","kind":"condition","cases":[{"handle":"h","when":"x"}]}],"edges":[{"source":"a","target":"b"},{"source":"a","target":"b","label":"l"},{"id":"a->b#3","source":"b","target":"a","max_iterations":2,"on_max_reached":"continue"}]}`,
		`{"nodes":[]}`,
	} {
		f.Add([]byte(s))
	}

	// Small limits let the fuzzer reach every limit; the defaults are what hosts use.
	small := Limits{MaxNodes: 64, MaxEdges: 128, MaxIDLength: 16, MaxExpressionLength: 64, MaxDocumentBytes: 1 << 16}
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, small)
		roundTrip(t, data, Limits{})
		collectsAll(t, data, small)
	})
}

// collectsAll checks DecodeAll against Decode: problems exactly when Decode
// fails, each with a message and a place inside the document.
func collectsAll(t *testing.T, data []byte, lim Limits) {
	t.Helper()
	_, err := Decode(data, lim)
	_, ps := DecodeAll(data, lim)
	if (err == nil) != (ps == nil) || ps != nil && len(ps) == 0 {
		t.Fatalf("Decode says %v, DecodeAll lists %d problems", err, len(ps))
	}
	line, _ := LineCol(data, len(data))
	for _, p := range ps {
		if p.Message == "" || p.Line < 0 || p.Line > line || len(ps) > MaxProblems {
			t.Fatalf("problem %+v of %d (the document has %d lines)", p, len(ps), line)
		}
	}
}

func roundTrip(t *testing.T, data []byte, lim Limits) {
	t.Helper()
	c, err := Decode(data, lim)
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("error is %T, not *DecodeError: %v", err, err)
		}
		return
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("marshal decoded chain: %v", err)
	}
	c2, err := Decode(b, lim)
	if err != nil {
		t.Fatalf("re-decode of %s: %v", b, err)
	}
	b2, err := json.Marshal(c2)
	if err != nil {
		t.Fatalf("marshal re-decoded chain: %v", err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("round trip changed the chain:\n%s\n%s", b, b2)
	}
	// Marshalling drops empty maps and slices, so compare the canonical forms.
	if !reflect.DeepEqual(c.Clone(), c2.Clone()) {
		t.Fatalf("round trip changed the chain:\n%+v\n%+v", c, c2)
	}
	// Normalize is idempotent on anything Decode returns.
	n := c2.Clone()
	if err := Normalize(n); err != nil {
		t.Fatalf("Normalize of a decoded chain: %v", err)
	}
	if !reflect.DeepEqual(n, c2.Clone()) {
		t.Fatalf("Normalize changed a decoded chain")
	}
}
