package engine_test

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
)

type fakeCreds map[string]string // name → type

func (f fakeCreds) Credential(_ context.Context, name string) (*tool.Secret, error) {
	return &tool.Secret{Name: name, Type: f[name], Values: map[string]any{"token": "t", "api_key": "k"}}, nil
}

// A node whose call resolved a credential a request carries is marked
// credentialed on its outcome event and its result, in a map body's items
// too; a model key does not mark it, nor does a node that resolved none.
func TestCredentialedCallsAreMarked(t *testing.T) {
	t.Parallel()
	reg := engine.NewRegistry()
	reg.Register("call", func(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
		if name, _ := in["cred"].(string); name != "" {
			if _, err := tool.CredentialsFrom(ctx).Credential(ctx, name); err != nil {
				return nil, err
			}
		}
		return map[string]any{"ok": true}, nil
	})
	sink := &engine.MemorySink{}
	e := engine.New(engine.Options{Registry: reg, Sink: sink, Checkpointer: engine.NewMemoryCheckpointer()})
	doc := mustDecode(t, `{"name":"c","nodes":[
		{"node_id":"http","kind":"tool","name":"call","input":{"cred":"gh"}},
		{"node_id":"model","kind":"tool","name":"call","input":{"cred":"llm"}},
		{"node_id":"none","kind":"tool","name":"call"},
		{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},
		{"node_id":"body","kind":"tool","name":"call","input":{"cred":"gh"}}],
		"edges":[{"source":"http","target":"model"},{"source":"model","target":"none"},{"source":"none","target":"m"}]}`)
	ctx := tool.WithCredentials(context.Background(), fakeCreds{"gh": "bearer", "llm": "openai"})
	res, err := e.Run(ctx, enginetest.PlanOf(e, doc), map[string]any{"items": []any{1.0, 2.0}}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"http": true, "model": false, "none": false, "m": true}
	for id, w := range want {
		nr := res.Nodes[id]
		if nr == nil {
			t.Fatalf("no result of node %s: %v (%v)", id, res.Nodes, res.Error)
		}
		if got := nr.Credentialed; got != w {
			t.Errorf("node %s result: credentialed %v, want %v", id, got, w)
		}
	}
	items := 0
	for _, ev := range sink.Events() {
		if ev.Phase != engine.PhaseDone {
			continue
		}
		if w, ok := want[ev.NodeID]; ok && ev.Credentialed != w {
			t.Errorf("node %s done event: credentialed %v, want %v", ev.NodeID, ev.Credentialed, w)
		}
		if ev.NodeID == "body" {
			items++
			if !ev.Credentialed {
				t.Errorf("map item %d not marked", *ev.Item)
			}
		}
	}
	if items != 2 {
		t.Fatalf("%d map item events, want 2", items)
	}
}
