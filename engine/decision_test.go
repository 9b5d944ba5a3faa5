package engine

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/expr"
)

// A value that fits is its JSON (keys sorted, numbers as encoding/json
// writes them); a larger one is cut, never inside a character.
func TestBoundedJSON(t *testing.T) {
	small := map[string]any{"b": []any{1.0, 2.5, true, nil, "x\"y"}, "a": map[string]any{"n": 1e21, "m": 1e-7, "z": -0.0, "big": 123456789.0}}
	got, cut := boundedJSON(small, MaxReadBytes)
	want, _ := json.Marshal(small)
	if cut || got != string(want) {
		t.Errorf("small value: %s (cut %v), want %s", got, cut, want)
	}
	if got, _ := boundedJSON(math.NaN(), 10); got != "null" {
		t.Errorf("NaN: %s", got)
	}
	for _, v := range []any{strings.Repeat("é", 1000), []any{strings.Repeat("ab", 400)}, map[string]any{"k": strings.Repeat("🦉", 200)}} {
		got, cut := boundedJSON(v, MaxReadBytes)
		body := strings.TrimSuffix(got, truncMark)
		if !cut || body == got || len(body) > MaxReadBytes || len(body) < MaxReadBytes-4 {
			t.Errorf("large value: %d bytes, cut %v", len(body), cut)
		}
		if !strings.HasPrefix(string(mustJSON(t, v)), body) {
			t.Errorf("the cut is not a prefix of the value's JSON: %s", body)
		}
	}
	// deep nesting stops the encoder, it does not overflow the stack
	var deep any = "x"
	for i := 0; i < 10000; i++ {
		deep = []any{deep}
	}
	if _, cut := boundedJSON(deep, MaxReadBytes); !cut {
		t.Error("a 10,000-deep value was not cut")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A decision keeps at most MaxReads paths, then says how many more.
func TestToReadsBounded(t *testing.T) {
	var rs []expr.Read
	for i := 0; i < MaxReads+5; i++ {
		rs = append(rs, expr.Read{Path: "p" + strconv.Itoa(i), Value: float64(i), Found: true})
	}
	got := toReads(rs, nil)
	if len(got) != MaxReads+1 || got[MaxReads-1].Value != strconv.Itoa(MaxReads-1) {
		t.Fatalf("%d reads: %+v", len(got), got)
	}
	if last := got[MaxReads]; last.Path != "…" || last.Value != "5 more paths" || !last.Truncated {
		t.Errorf("last: %+v", last)
	}
}
