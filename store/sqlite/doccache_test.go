package sqlite

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chainstudio/studio/engine"
)

// TestCloneNodeCoversEveryField fails when engine.Node gains a map, slice or
// pointer field that cloneNode does not copy (the cache would then share it).
func TestCloneNodeCoversEveryField(t *testing.T) {
	t.Parallel()
	yes := true
	n := engine.Node{
		ID: "a", Input: map[string]any{"m": map[string]any{"k": []any{1.0}}}, InputMap: map[string]string{"a": "b"},
		SetState: map[string]string{"s": "t"}, Cases: []engine.Case{{Handle: "h"}}, Branches: []string{"x"},
		Retry: &engine.Retry{MaxAttempts: 2}, Reachable: &yes, Position: &engine.Position{X: 1}, Config: map[string]any{"c": []any{"d"}},
	}
	c := cloneNode(&n)
	if !reflect.DeepEqual(c, n) {
		t.Fatal("clone differs")
	}
	nv, cv := reflect.ValueOf(n), reflect.ValueOf(c)
	for i := 0; i < nv.NumField(); i++ {
		f := nv.Type().Field(i)
		switch f.Type.Kind() {
		case reflect.Map, reflect.Slice, reflect.Pointer:
			if nv.Field(i).IsNil() {
				t.Errorf("test node leaves %s nil: set it so the check covers it", f.Name)
				continue
			}
			if nv.Field(i).UnsafePointer() == cv.Field(i).UnsafePointer() {
				t.Errorf("cloneNode shares field %s", f.Name)
			}
		case reflect.Interface, reflect.Struct, reflect.Chan, reflect.Func:
			t.Errorf("cloneNode does not know how to copy field %s (%s)", f.Name, f.Type)
		}
	}
	c.Input["m"].(map[string]any)["k"].([]any)[0] = 2.0
	if n.Input["m"].(map[string]any)["k"].([]any)[0] != 1.0 {
		t.Fatal("nested value shared")
	}
}

func TestDocCacheReturnsCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTest(t)
	ch, _ := db.CreateChain(ctx, sampleChain("c", 3), "")
	a, _ := db.GetChain(ctx, ch.ID) // miss: decoded and cached
	a.Doc.Nodes[0].Input["text"] = "mutated"
	a.Doc.Nodes = a.Doc.Nodes[:1]
	b, _ := db.GetChain(ctx, ch.ID) // hit
	if len(b.Doc.Nodes) != 3 || b.Doc.Nodes[0].Input["text"] != "hello n0" {
		t.Fatalf("cache handed out shared state: %+v", b.Doc.Nodes[0])
	}
	// Same content through a database without a cache.
	nc, err := Open(ctx, filepath.Join(t.TempDir(), "x.db"), Options{DocCacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ch2, _ := nc.CreateChain(ctx, sampleChain("c", 3), "")
	c, _ := nc.GetChain(ctx, ch2.ID)
	jsonEqual(t, c.Doc, b.Doc)
	// Eviction keeps the cache bounded.
	dc := newDocCache(2)
	for v := 1; v <= 5; v++ {
		dc.put("x", v, sampleChain("c", 1))
	}
	if dc.ll.Len() != 2 || dc.get("x", 1) != nil || dc.get("x", 5) == nil {
		t.Fatal("eviction")
	}
}
