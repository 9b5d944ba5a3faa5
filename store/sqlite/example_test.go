package sqlite_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store/sqlite"
)

// Open a database file (created and migrated on first use), store a chain as
// its published version 1, save an edit as the draft version 2, and read
// both back. The returned *sqlite.DB is a store.Backend: what cmd/studio
// hands to the run service and the server.
func Example() {
	dir, err := os.MkdirTemp("", "studio-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "studio.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	doc, err := chain.Decode([]byte(`{"name": "hello", "nodes": [
	  {"node_id": "greet", "kind": "tool", "name": "echo", "input_map": {"who": "input.name"}}]}`), chain.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ch, err := db.CreateChain(ctx, doc, "first version", true)
	if err != nil {
		fmt.Println(err)
		return
	}
	// An edit names the version it started from (1): had the chain moved
	// on since, nothing would be written and the error would say so.
	edit := doc.Clone()
	edit.Nodes = append(edit.Nodes, chain.Node{ID: "log", Kind: chain.KindTool, Name: "echo"})
	edit.Edges = append(edit.Edges, chain.Edge{Source: "greet", Target: "log"})
	if _, err := db.SaveChain(ctx, ch.ID, 1, edit, "add a log step"); err != nil {
		fmt.Println(err)
		return
	}

	draft, err := db.GetChain(ctx, ch.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: draft v%d with %d nodes, published v%d\n", draft.Name, draft.Version, len(draft.Doc.Nodes), draft.Published.Version)
	published, err := db.GetPublishedChain(ctx, ch.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("published v%d has %d node\n", published.Version, len(published.Doc.Nodes))
	versions, err := db.ListVersions(ctx, ch.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range versions {
		fmt.Printf("v%d %s: %s\n", v.Version, v.Kind, v.Message)
	}
	// Output:
	// hello: draft v2 with 2 nodes, published v1
	// published v1 has 1 node
	// v2 save: add a log step
	// v1 save: first version
}
