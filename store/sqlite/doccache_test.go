package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

func TestDocCacheReturnsCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTest(t)
	ch, _ := db.CreateChain(ctx, sampleChain("c", 3), "", true)
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
	ch2, _ := nc.CreateChain(ctx, sampleChain("c", 3), "", true)
	c, _ := nc.GetChain(ctx, ch2.ID)
	jsonEqual(t, c.Doc, b.Doc)
}
