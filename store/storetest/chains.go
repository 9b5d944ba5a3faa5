package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

func testChainLifecycle(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)

	doc := SampleChain("Fetch Report", 3)
	ch, err := db.CreateChain(ctx, doc, "initial", true)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Version != 1 || ch.ID == "" || ch.NodeCount != 3 || ch.Created.IsZero() {
		t.Fatalf("created %+v", ch)
	}
	got, err := db.GetChain(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	JSONEqual(t, got.Doc, doc)
	if !got.Created.Equal(ch.Created) || got.Name != "Fetch Report" || got.Description != "a test chain" {
		t.Fatalf("get %+v vs %+v", got, ch)
	}
	byName, err := db.GetChainByName(ctx, "Fetch Report")
	if err != nil || byName.ID != ch.ID {
		t.Fatalf("by name: %v %v", byName, err)
	}
	if _, err := db.GetChain(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing chain: %v", err)
	}
	if _, err := db.GetChainByName(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing chain by name: %v", err)
	}
	// Name taken.
	_, err = db.CreateChain(ctx, SampleChain("Fetch Report", 1), "", true)
	var ce *store.ConflictError
	if !errors.Is(err, store.ErrNameTaken) || !errors.As(err, &ce) || ce.ChainID != ch.ID {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := db.CreateChain(ctx, &chain.Chain{}, "", true); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("nameless chain: %v", err)
	}

	// Save v2, then a stale save based on v1 conflicts and writes nothing.
	doc2 := doc.Clone()
	doc2.Nodes[1].Input["text"] = "changed"
	doc2.Nodes[2].Position = &chain.Position{X: 99, Y: 99}
	ch2, err := db.SaveChain(ctx, ch.ID, 1, doc2, "edit")
	if err != nil {
		t.Fatal(err)
	}
	if ch2.Version != 2 {
		t.Fatalf("version %d", ch2.Version)
	}
	doc3 := doc.Clone()
	doc3.Description = "stale"
	_, err = db.SaveChain(ctx, ch.ID, 1, doc3, "stale edit")
	var vc *store.VersionConflictError
	if !errors.As(err, &vc) || vc.Current != 2 || !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("stale save: %v", err)
	}
	cur, _ := db.GetChain(ctx, ch.ID)
	if cur.Version != 2 || cur.Description != "a test chain" {
		t.Fatalf("stale save overwrote: %+v", cur)
	}
	if _, err := db.SaveChain(ctx, "nope", 1, doc3, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("save of missing chain: %v", err)
	}

	// Renaming onto another chain's name is refused.
	other, err := db.CreateChain(ctx, SampleChain("Other", 1), "", true)
	if err != nil {
		t.Fatal(err)
	}
	ren := doc2.Clone()
	ren.Name = "Other"
	if _, err := db.SaveChain(ctx, ch.ID, 2, ren, ""); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("rename onto taken name: %v", err)
	}

	// History.
	vs, err := db.ListVersions(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Version != 2 || vs[0].Message != "edit" || vs[1].Message != "initial" || vs[0].Doc != nil {
		t.Fatalf("versions %+v", vs)
	}
	v1, err := db.GetVersion(ctx, ch.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	JSONEqual(t, v1.Doc, doc)
	if _, err := db.GetVersion(ctx, ch.ID, 9); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing version: %v", err)
	}

	// Each version keeps its own document: the edit is in v2 only (callers
	// diff two versions' documents with engine/inspect).
	v2, err := db.GetVersion(ctx, ch.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	JSONEqual(t, v2.Doc, doc2)
	if v2.Doc.Nodes[1].Input["text"] != "changed" || v1.Doc.Nodes[1].Input["text"] != "hello n1" {
		t.Fatalf("v1 %v, v2 %v", v1.Doc.Nodes[1].Input, v2.Doc.Nodes[1].Input)
	}

	// Restore v1 → v3 with v1's content.
	ch3, err := db.RestoreVersion(ctx, ch.ID, 1, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if ch3.Version != 3 {
		t.Fatalf("restore made version %d", ch3.Version)
	}
	cur, _ = db.GetChain(ctx, ch.ID)
	JSONEqual(t, cur.Doc, doc)
	vs, _ = db.ListVersions(ctx, ch.ID)
	if len(vs) != 3 || vs[0].Message != "restored version 1" {
		t.Fatalf("versions after restore %+v", vs)
	}
	v3, err := db.GetVersion(ctx, ch.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	JSONEqual(t, v3.Doc, v1.Doc)

	// Listing.
	if _, err := db.CreateRun(ctx, store.Run{ID: "r1", ChainID: ch.ID, ChainVersion: 3, Status: chain.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	list, total, err := db.ListChains(ctx, store.ChainFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 || len(list) != 2 || list[0].Name != "Fetch Report" || list[0].LastRunStatus != chain.StatusCompleted ||
		list[0].NodeCount != 3 || list[0].Version != 3 || list[1].LastRunStatus != "" {
		t.Fatalf("list %+v total %d", list, total)
	}
	list, total, _ = db.ListChains(ctx, store.ChainFilter{Query: "REPORT"})
	if total != 1 || len(list) != 1 || list[0].ID != ch.ID {
		t.Fatalf("query list %+v", list)
	}
	list, total, _ = db.ListChains(ctx, store.ChainFilter{Name: "Fetch Report"})
	if total != 1 || len(list) != 1 || list[0].ID != ch.ID {
		t.Fatalf("list by name %+v", list)
	}
	if list, total, _ = db.ListChains(ctx, store.ChainFilter{Name: "fetch report"}); total != 0 || len(list) != 0 {
		t.Fatalf("a name is exact, not case-insensitive: %+v", list)
	}
	list, total, _ = db.ListChains(ctx, store.ChainFilter{Query: "%"})
	if total != 0 || len(list) != 0 {
		t.Fatalf("LIKE wildcard not escaped: %+v", list)
	}
	list, total, _ = db.ListChains(ctx, store.ChainFilter{Limit: 1, Offset: 1})
	if total != 2 || len(list) != 1 || list[0].ID != other.ID {
		t.Fatalf("paged list %+v", list)
	}

	// Delete frees the name; history stays readable.
	if err := db.DeleteChain(ctx, ch.ID, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteChain(ctx, ch.ID, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := db.GetChain(ctx, ch.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted chain still visible: %v", err)
	}
	if _, err := db.SaveChain(ctx, ch.ID, 3, doc, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("save to deleted chain: %v", err)
	}
	if _, total, _ := db.ListChains(ctx, store.ChainFilter{}); total != 1 {
		t.Fatalf("deleted chain listed")
	}
	if vs, err := db.ListVersions(ctx, ch.ID); err != nil || len(vs) != 3 {
		t.Fatalf("history of deleted chain: %v %v", vs, err)
	}
	again, err := db.CreateChain(ctx, SampleChain("Fetch Report", 1), "reuse", true)
	if err != nil {
		t.Fatalf("name not reusable after delete: %v", err)
	}
	if again.ID == ch.ID {
		t.Fatal("same id")
	}
	res, err := db.ResolveChain(ctx, "Fetch Report")
	if err != nil || len(res.Nodes) != 1 {
		t.Fatalf("resolve: %v %v", res, err)
	}
}

// Naming a version writes a new version with the current document, marked
// named; the autosave before it is kept as it was.
func testNameVersion(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	ch, err := db.CreateChain(ctx, SampleChain("named", 2), "created", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveChainAs(ctx, ch.ID, 1, SampleChain("named", 3), "edited in the designer", store.VersionAutosave); err != nil {
		t.Fatal(err)
	}
	n, err := db.NameVersion(ctx, ch.ID, 2, "  Ready for review  ")
	if err != nil {
		t.Fatal(err)
	}
	if n.Version != 3 || len(n.Doc.Nodes) != 3 {
		t.Fatalf("named: v%d with %d nodes", n.Version, len(n.Doc.Nodes))
	}
	vs, _ := db.ListVersions(ctx, ch.ID)
	if vs[0].Kind != store.VersionNamed || vs[0].Message != "Ready for review" || vs[1].Kind != store.VersionAutosave || vs[2].Kind != store.VersionSave {
		t.Fatalf("versions: %+v", vs)
	}
	named, err := db.GetVersion(ctx, ch.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	autosave, err := db.GetVersion(ctx, ch.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	JSONEqual(t, named.Doc, autosave.Doc)
	if _, err := db.NameVersion(ctx, ch.ID, 2, "stale"); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("stale base: %v", err)
	}
	if _, err := db.NameVersion(ctx, ch.ID, 0, "   "); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("empty message: %v", err)
	}
	if _, err := db.NameVersion(ctx, "nope", 0, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown chain: %v", err)
	}
}

// Restore and delete with a base version that is no longer current change
// nothing and say which version is (the API's If-Match); with the current
// one they go ahead.
func testStaleBaseVersion(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	ch, err := db.CreateChain(ctx, SampleChain("stale", 2), "created", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveChain(ctx, ch.ID, 1, SampleChain("stale", 3), "edit"); err != nil {
		t.Fatal(err)
	}
	var ve *store.VersionConflictError
	if _, err := db.RestoreVersion(ctx, ch.ID, 1, 1, ""); !errors.As(err, &ve) || ve.Current != 2 || ve.Base != 1 {
		t.Fatalf("restore on a stale base: %v", err)
	}
	if err := db.DeleteChain(ctx, ch.ID, 1); !errors.As(err, &ve) || ve.Current != 2 {
		t.Fatalf("delete on a stale base: %v", err)
	}
	if vs, _ := db.ListVersions(ctx, ch.ID); len(vs) != 2 {
		t.Fatalf("a refused restore wrote a version: %+v", vs)
	}
	got, err := db.RestoreVersion(ctx, ch.ID, 1, 2, "")
	if err != nil || got.Version != 3 || len(got.Doc.Nodes) != 2 {
		t.Fatalf("restore on the current base: %+v %v", got, err)
	}
	if err := db.DeleteChain(ctx, ch.ID, 3); err != nil {
		t.Fatalf("delete on the current base: %v", err)
	}
	if err := db.DeleteChain(ctx, ch.ID, 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete of a deleted chain with a base: %v", err)
	}
}

// ChainFilter.After pages chains in list order (case-insensitive name, then
// id) from a row's place; the total counts the whole filtered list.
func testChainsKeysetPaging(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	for _, n := range []string{"b", "A", "c", "aa", "other"} {
		if _, err := db.CreateChain(ctx, SampleChain(n, 1), "", true); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	var after *store.ChainKey
	for i := 0; i < 5; i++ {
		rows, total, err := db.ListChains(ctx, store.ChainFilter{Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if total != 5 {
			t.Fatalf("total %d on page %d", total, i)
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			got = append(got, r.Name)
		}
		last := rows[len(rows)-1]
		after = &store.ChainKey{Name: last.Name, ID: last.ID}
	}
	if strings.Join(got, ",") != "A,aa,b,c,other" {
		t.Fatalf("pages: %v", got)
	}
	rows, total, err := db.ListChains(ctx, store.ChainFilter{Query: "A", After: &store.ChainKey{Name: "a", ID: ""}})
	if err != nil || total != 2 || len(rows) != 2 {
		t.Fatalf("after a name with no id: %v total %d %v", rows, total, err)
	}
}

// NoOpSave: a save whose document is the current version's (a fresh copy
// of it, decoded again: the comparison is of the stored form) writes no
// version and returns the chain at its current version; any change, even
// a node's position, makes one. Both SaveChain and SaveChainAs.
func testNoOpSave(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	ch, err := db.CreateChain(ctx, SampleChain("same", 3), "initial", true)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := db.GetChain(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(cur.Doc)
	var again chain.Chain
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatal(err)
	}
	for i, save := range []func(*chain.Chain) (*store.Chain, error){
		func(d *chain.Chain) (*store.Chain, error) { return db.SaveChain(ctx, ch.ID, 1, d, "nothing") },
		func(d *chain.Chain) (*store.Chain, error) {
			return db.SaveChainAs(ctx, ch.ID, 1, d, "autosave", store.VersionAutosave)
		},
	} {
		got, err := save(&again)
		if err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
		if got.Version != 1 || got.ID != ch.ID || got.Name != "same" || got.NodeCount != 3 {
			t.Fatalf("no-op save %d answered %+v, want version 1", i, got)
		}
	}
	if vs, err := db.ListVersions(ctx, ch.ID); err != nil || len(vs) != 1 {
		t.Fatalf("after no-op saves: %d versions (%v), want 1", len(vs), err)
	}
	if c, _ := db.GetChain(ctx, ch.ID); c.Version != 1 {
		t.Fatalf("current version %d after no-op saves", c.Version)
	}
	// A stale base still conflicts, whatever the document.
	moved := again.Clone()
	moved.Nodes[0].Position = &chain.Position{X: 1, Y: 2}
	if got, err := db.SaveChain(ctx, ch.ID, 1, moved, "moved"); err != nil || got.Version != 2 {
		t.Fatalf("a moved node: %+v %v, want version 2", got, err)
	}
	var ve *store.VersionConflictError
	if _, err := db.SaveChain(ctx, ch.ID, 1, moved, "stale"); !errors.As(err, &ve) || ve.Current != 2 {
		t.Fatalf("stale no-op: %v, want a version conflict", err)
	}
	// Restoring and naming still make versions (they record an act).
	if got, err := db.NameVersion(ctx, ch.ID, 2, "release"); err != nil || got.Version != 3 {
		t.Fatalf("name version: %+v %v", got, err)
	}
}

// A new chain is published at version 1; saves after it are a draft that
// GetPublishedChain and ResolveChain (skill calls) do not see until
// PublishChain moves the published version, recording who and why.
func testPublish(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	ch, err := db.CreateChain(ctx, SampleChain("pub", 2), "created", true)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Published.Version != 1 || ch.Unpublished() {
		t.Fatalf("created: published %+v", ch.Published)
	}
	if _, err := db.SaveChainAs(ctx, ch.ID, 1, SampleChain("pub", 3), "edit", store.VersionAutosave); err != nil {
		t.Fatal(err)
	}
	cur, err := db.GetChain(ctx, ch.ID)
	if err != nil || cur.Version != 2 || cur.Published.Version != 1 || !cur.Unpublished() {
		t.Fatalf("after an edit: %+v %v", cur, err)
	}
	pub, err := db.GetPublishedChain(ctx, ch.ID)
	if err != nil || pub.Version != 1 || len(pub.Doc.Nodes) != 2 || pub.NodeCount != 2 {
		t.Fatalf("published chain: %+v %v", pub, err)
	}
	if doc, err := db.ResolveChain(ctx, "pub"); err != nil || len(doc.Nodes) != 2 {
		t.Fatalf("a skill call resolves the draft: %v", err)
	}
	if _, err := db.PublishChain(ctx, ch.ID, 0, 1, "ann", "stale"); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("stale base: %v", err)
	}
	if _, err := db.PublishChain(ctx, ch.ID, 5, 0, "ann", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown version: %v", err)
	}
	if _, err := db.PublishChain(ctx, "nope", 0, 0, "ann", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown chain: %v", err)
	}
	if _, err := db.PublishChain(ctx, ch.ID, 0, 0, "ann", strings.Repeat("m", store.MaxVersionMessage+1)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("long message: %v", err)
	}
	got, err := db.PublishChain(ctx, ch.ID, 0, 2, "ann", "  ready  ")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || got.Published.Version != 2 || got.Published.By != "ann" || got.Published.Message != "ready" || got.Published.At.IsZero() || got.Unpublished() {
		t.Fatalf("published: %+v", got.Published)
	}
	if doc, err := db.ResolveChain(ctx, "pub"); err != nil || len(doc.Nodes) != 3 {
		t.Fatalf("after publishing, a skill call resolves %v nodes: %v", doc, err)
	}
	rows, _, err := db.ListChains(ctx, store.ChainFilter{Name: "pub"})
	if err != nil || len(rows) != 1 || rows[0].Published != 2 {
		t.Fatalf("list: %+v %v", rows, err)
	}
	// Saving keeps the publication (the draft moves on without it).
	saved, err := db.SaveChain(ctx, ch.ID, 2, SampleChain("pub", 4), "")
	if err != nil || saved.Published.Version != 2 || saved.Published.By != "ann" {
		t.Fatalf("a save after publishing: %+v %v", saved, err)
	}

	// A chain created unpublished has nothing to run by id or by name
	// until it is published.
	draft, err := db.CreateChain(ctx, SampleChain("draft-only", 1), "blank", false)
	if err != nil || draft.Published.Version != 0 || !draft.Unpublished() {
		t.Fatalf("created unpublished: %+v %v", draft, err)
	}
	if got, err := db.GetChain(ctx, draft.ID); err != nil || got.Published.Version != 0 || got.Published.Message != "" {
		t.Fatalf("read back: %+v %v", got, err)
	}
	if _, err := db.GetPublishedChain(ctx, draft.ID); !errors.Is(err, store.ErrNotPublished) {
		t.Fatalf("the published version of a chain never published: %v", err)
	}
	if _, err := db.ResolveChain(ctx, "draft-only"); err == nil {
		t.Fatal("a skill call resolves a chain never published")
	}
}
