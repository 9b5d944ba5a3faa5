package storetest

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/store"
)

// testChainMCP: exposing a chain as an MCP tool is a setting of the record:
// it makes no version, survives saves, and a deleted chain leaves the list.
func testChainMCP(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	a, err := db.CreateChain(ctx, SampleChain("MCP B", 2), "", true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.CreateChain(ctx, SampleChain("MCP A", 2), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if a.MCPExposed {
		t.Fatal("a new chain is exposed")
	}
	if list, more, err := db.ListMCPChains(ctx, 10); err != nil || len(list) != 0 || more {
		t.Fatalf("nothing exposed: %v %v %v", list, more, err)
	}
	for _, id := range []string{a.ID, b.ID} {
		if err := db.SetChainMCP(ctx, id, true); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.GetChain(ctx, a.ID)
	if err != nil || !got.MCPExposed || got.Version != 1 {
		t.Fatalf("exposed chain read back: %+v %v", got, err)
	}
	list, more, err := db.ListMCPChains(ctx, 10)
	if err != nil || len(list) != 2 || more || list[0].Name != "MCP A" || list[1].Name != "MCP B" || list[0].Doc == nil || !list[0].MCPExposed {
		t.Fatalf("list: %+v %v %v", list, more, err)
	}
	if list, more, err := db.ListMCPChains(ctx, 1); err != nil || len(list) != 1 || !more {
		t.Fatalf("limit 1: %d %v %v", len(list), more, err)
	}
	// A save keeps the setting (it is not in the document).
	doc := SampleChain("MCP B", 3)
	saved, err := db.SaveChain(ctx, a.ID, 1, doc, "more")
	if err != nil || !saved.MCPExposed || saved.Version != 2 {
		t.Fatalf("saved: %+v %v", saved, err)
	}
	if err := db.SetChainMCP(ctx, a.ID, false); err != nil {
		t.Fatal(err)
	}
	if got, err := db.GetChain(ctx, a.ID); err != nil || got.MCPExposed || got.Version != 2 {
		t.Fatalf("unexposed: %+v %v", got, err)
	}
	if err := db.DeleteChain(ctx, b.ID, 0); err != nil {
		t.Fatal(err)
	}
	if list, _, err := db.ListMCPChains(ctx, 10); err != nil || len(list) != 0 {
		t.Fatalf("after delete: %+v %v", list, err)
	}
	if err := db.SetChainMCP(ctx, b.ID, true); store.ErrorCode(err) != store.ENOTFOUND {
		t.Fatalf("deleted chain: %v", err)
	}
	if err := db.SetChainMCP(ctx, "nope", true); store.ErrorCode(err) != store.ENOTFOUND {
		t.Fatalf("unknown chain: %v", err)
	}
}
