package doccache

import (
	"reflect"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
)

// TestCloneNodeCoversEveryField fails when chain.Node gains a map, slice or
// pointer field that cloneNode does not copy (the cache would then share it).
func TestCloneNodeCoversEveryField(t *testing.T) {
	t.Parallel()
	yes := true
	n := chain.Node{
		ID: "a", Input: map[string]any{"m": map[string]any{"k": []any{1.0}}}, InputMap: map[string]string{"a": "b"},
		SetState: map[string]string{"s": "t"}, Cases: []chain.Case{{Handle: "h"}}, Branches: []string{"x"},
		Retry: &chain.Retry{MaxAttempts: 2}, Reachable: &yes, Position: &chain.Position{X: 1}, Config: map[string]any{"c": []any{"d"}},
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

// Eviction keeps the cache bounded, least recently used first.
func TestCacheEvicts(t *testing.T) {
	t.Parallel()
	dc := New(2)
	doc := &chain.Chain{Name: "c", Nodes: []chain.Node{{ID: "a", Kind: chain.KindTool, Name: "echo"}}}
	for v := 1; v <= 5; v++ {
		dc.Put("x", v, doc)
	}
	if dc.ll.Len() != 2 || dc.Get("x", 1) != nil || dc.Get("x", 5) == nil {
		t.Fatal("eviction")
	}
}
