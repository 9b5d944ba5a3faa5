package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/internal/jsonlit"
)

// ChainDiff is the structural difference between two chain documents (a → b).
// Field names are JSON names; nodes are matched by node_id, edges by id (an
// edge without an id by source, target and label). Every list is sorted, so a
// diff is deterministic.
type ChainDiff struct {
	Chain        []string      `json:"chain,omitempty"`         // chain-level fields that changed
	ChainChanges []FieldChange `json:"chain_changes,omitempty"` // and their values, old → new
	NodesAdded   []string      `json:"nodes_added,omitempty"`
	NodesRemoved []string      `json:"nodes_removed,omitempty"`
	NodesChanged []NodeChange  `json:"nodes_changed,omitempty"`
	EdgesAdded   []string      `json:"edges_added,omitempty"`
	EdgesRemoved []string      `json:"edges_removed,omitempty"`
	EdgesChanged []EdgeChange  `json:"edges_changed,omitempty"`
}

// NodeChange lists the fields of one node that changed. A move on the canvas
// is the field "position".
type NodeChange struct {
	NodeID  string        `json:"node_id"`
	Fields  []string      `json:"fields"`
	Changes []FieldChange `json:"changes,omitempty"`
}

// EdgeChange lists the fields of one edge that changed.
type EdgeChange struct {
	EdgeID  string        `json:"edge_id"`
	Fields  []string      `json:"fields"`
	Changes []FieldChange `json:"changes,omitempty"`
}

// FieldChange is one changed value, old → new, as JSON; an absent value (a
// field left out, a map key added or removed) is nil. A field holding a map
// (input, input_map, set_state, config…) changes key by key: Field is then
// "input_map.total", so each expression shows on its own.
type FieldChange struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old,omitempty"`
	New   json.RawMessage `json:"new,omitempty"`
}

// Empty reports whether the two documents are structurally equal.
func (d *ChainDiff) Empty() bool {
	return len(d.Chain) == 0 && len(d.NodesAdded) == 0 && len(d.NodesRemoved) == 0 && len(d.NodesChanged) == 0 &&
		len(d.EdgesAdded) == 0 && len(d.EdgesRemoved) == 0 && len(d.EdgesChanged) == 0
}

// Diff compares chain a with chain b. A nil chain is an empty one. The order
// of nodes and edges in the documents does not matter.
func Diff(a, b *chain.Chain) *ChainDiff {
	if a == nil {
		a = &chain.Chain{}
	}
	if b == nil {
		b = &chain.Chain{}
	}
	d := &ChainDiff{}
	d.Chain, d.ChainChanges = changedFields(reflect.ValueOf(*a), reflect.ValueOf(*b), "nodes", "edges")

	an := make(map[string]*chain.Node, len(a.Nodes))
	for i := range a.Nodes {
		an[a.Nodes[i].ID] = &a.Nodes[i]
	}
	bn := make(map[string]*chain.Node, len(b.Nodes))
	for i := range b.Nodes {
		bn[b.Nodes[i].ID] = &b.Nodes[i]
	}
	for id, nb := range bn {
		na, ok := an[id]
		if !ok {
			d.NodesAdded = append(d.NodesAdded, id)
			continue
		}
		if f, ch := changedFields(reflect.ValueOf(*na), reflect.ValueOf(*nb), "node_id"); len(f) > 0 {
			d.NodesChanged = append(d.NodesChanged, NodeChange{NodeID: id, Fields: f, Changes: ch})
		}
	}
	for id := range an {
		if _, ok := bn[id]; !ok {
			d.NodesRemoved = append(d.NodesRemoved, id)
		}
	}

	ae := edgeIndex(a.Edges)
	be := edgeIndex(b.Edges)
	for id, eb := range be {
		ea, ok := ae[id]
		if !ok {
			d.EdgesAdded = append(d.EdgesAdded, id)
			continue
		}
		if f, ch := changedFields(reflect.ValueOf(*ea), reflect.ValueOf(*eb), "id"); len(f) > 0 {
			d.EdgesChanged = append(d.EdgesChanged, EdgeChange{EdgeID: id, Fields: f, Changes: ch})
		}
	}
	for id := range ae {
		if _, ok := be[id]; !ok {
			d.EdgesRemoved = append(d.EdgesRemoved, id)
		}
	}

	sort.Strings(d.NodesAdded)
	sort.Strings(d.NodesRemoved)
	sort.Slice(d.NodesChanged, func(i, j int) bool { return d.NodesChanged[i].NodeID < d.NodesChanged[j].NodeID })
	sort.Strings(d.EdgesAdded)
	sort.Strings(d.EdgesRemoved)
	sort.Slice(d.EdgesChanged, func(i, j int) bool { return d.EdgesChanged[i].EdgeID < d.EdgesChanged[j].EdgeID })
	return d
}

// edgeKey identifies an edge across versions: its id, or for an edge without
// one, source->target with its label.
func edgeKey(e *chain.Edge) string {
	if e.ID != "" {
		return e.ID
	}
	if e.Label != "" {
		return fmt.Sprintf("%s->%s[%s]", e.Source, e.Target, e.Label)
	}
	return e.Source + "->" + e.Target
}

func edgeIndex(es []chain.Edge) map[string]*chain.Edge {
	m := make(map[string]*chain.Edge, len(es))
	for i := range es {
		k := edgeKey(&es[i])
		if _, dup := m[k]; dup {
			// Two id-less edges with the same ends and label: keep them apart.
			for n := 2; ; n++ {
				kk := fmt.Sprintf("%s#%d", k, n)
				if _, dup := m[kk]; !dup {
					k = kk
					break
				}
			}
		}
		m[k] = &es[i]
	}
	return m
}

// changedFields compares two structs of one type field by field, by the JSON
// each field encodes to, and returns the JSON names of the fields that differ,
// in declaration order, with their values old → new. A field that omitempty
// would leave out compares equal to any other such value (a nil map equals an
// empty one).
func changedFields(a, b reflect.Value, skip ...string) ([]string, []FieldChange) {
	t := a.Type()
	var out []string
	var changes []FieldChange
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if contains(skip, name) {
			continue
		}
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		aj, bj := fieldJSON(a.Field(i), omit), fieldJSON(b.Field(i), omit)
		if !bytes.Equal(aj, bj) {
			out = append(out, name)
			changes = append(changes, valueChanges(name, a.Field(i), b.Field(i), aj, bj)...)
		}
	}
	return out, changes
}

// valueChanges is the change of one field: key by key for a map of strings
// or values (the keys sorted), else the whole value.
func valueChanges(name string, a, b reflect.Value, aj, bj []byte) []FieldChange {
	if a.Kind() != reflect.Map || a.Type().Key().Kind() != reflect.String {
		return []FieldChange{{Field: name, Old: rawOrNil(aj), New: rawOrNil(bj)}}
	}
	keys := map[string]bool{}
	for _, m := range []reflect.Value{a, b} {
		for _, k := range m.MapKeys() {
			keys[k.String()] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []FieldChange
	for _, k := range sorted {
		var ka, kb []byte
		if v := a.MapIndex(reflect.ValueOf(k).Convert(a.Type().Key())); v.IsValid() {
			ka = fieldJSON(v, false)
		}
		if v := b.MapIndex(reflect.ValueOf(k).Convert(b.Type().Key())); v.IsValid() {
			kb = fieldJSON(v, false)
		}
		if !bytes.Equal(ka, kb) {
			out = append(out, FieldChange{Field: name + "." + k, Old: rawOrNil(ka), New: rawOrNil(kb)})
		}
	}
	if len(out) == 0 { // equal content that encodes differently: show the whole value
		return []FieldChange{{Field: name, Old: rawOrNil(aj), New: rawOrNil(bj)}}
	}
	return out
}

func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return json.RawMessage(b)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func fieldJSON(v reflect.Value, omit bool) []byte {
	if omit && isEmptyValue(v) {
		return nil
	}
	b, err := jsonlit.Marshal(v.Interface())
	if err != nil {
		// Not JSON-safe: fall back to Go's formatting so a difference still shows.
		return []byte(fmt.Sprintf("%#v", v.Interface()))
	}
	return b
}

// isEmptyValue is encoding/json's omitempty rule.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
