package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
)

// bigEditorChain is e2e/lib.mjs's bigChain: a spine of echo tools with positions.
func bigEditorChain(name string, n int) *chain.Chain {
	doc := &chain.Chain{Name: name}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i)
		doc.Nodes = append(doc.Nodes, chain.Node{ID: id, Kind: chain.KindTool, Name: "echo", Label: fmt.Sprintf("Step %d", i),
			Position: &chain.Position{X: float64(i%40) * 200, Y: float64(i/40) * 110}})
		if i > 0 {
			doc.Edges = append(doc.Edges, chain.Edge{Source: fmt.Sprintf("n%d", i-1), Target: id})
		}
	}
	return doc
}

// BenchmarkEditorSaveSteps times each step of the editor's save of a
// 5,000-node chain, to see where a round trip goes: decode is the whole
// document's strict decode (the save before patches), patch its
// replacement (read the latest version, apply a one-node patch).
func BenchmarkEditorSaveSteps(b *testing.B) {
	srv, _ := newTestServer(b)
	ctx := context.Background()
	doc := bigEditorChain("bench-save", 5000)
	ch, err := srv.DB.CreateChain(ctx, doc, "", true)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := json.Marshal(doc)
	b.Logf("document %d bytes", len(body))
	v := ch.Version
	b.Run("decode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := chain.Decode(body, srv.cfg.Limits); err != nil {
				b.Fatal(err)
			}
		}
	})
	// the patch form of the same save: the stored latest version, copied
	// from the decoded-document cache, with one node replaced
	patch := []byte(`{"nodes":[{"node_id":"n1","kind":"tool","name":"echo","label":"Step 1 edited","position":{"x":200,"y":0}}],"expect":{"nodes":5000,"edges":4999}}`)
	b.Run("patch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cur, err := srv.DB.GetChain(ctx, ch.ID)
			if err != nil {
				b.Fatal(err)
			}
			if err := chain.ApplyPatch(cur.Doc, patch, srv.cfg.Limits); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			doc.Nodes[1].Label = fmt.Sprint("x", i)
			c2, err := srv.DB.SaveChainAs(ctx, ch.ID, v, doc, "e", store.VersionAutosave)
			if err != nil {
				b.Fatal(err)
			}
			v = c2.Version
		}
	})
	b.Run("get", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := srv.DB.GetChain(ctx, ch.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	var issues []chain.Issue
	b.Run("validate", func(b *testing.B) {
		opts := chain.ValidateOptions{Tools: srv.Registry.Has, ToolOutput: srv.Registry.OutputSchema, Schemas: srv.Registry.NodeSchemas(srv.Agents.NodeSchemas), Limits: srv.cfg.Limits}
		for i := 0; i < b.N; i++ {
			issues = chain.ValidateWith(doc, opts)
		}
	})
	b.Run("render", func(b *testing.B) {
		var buf bytes.Buffer
		for i := 0; i < b.N; i++ {
			buf.Reset()
			if err := views.Issues(issues, "").Render(ctx, &buf); err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("%d issues, %d bytes", len(issues), buf.Len())
	})
}

// BenchmarkEditorEncode5000 is the JSON encoding a stored version costs.
func BenchmarkEditorEncode5000(b *testing.B) {
	doc := bigEditorChain("bench-save", 5000)
	for i := 0; i < b.N; i++ {
		if _, err := json.Marshal(doc); err != nil {
			b.Fatal(err)
		}
	}
}
