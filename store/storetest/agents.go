package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chainstudio/studio/store"
)

// Agents: each save is a new version with its source and message; a save
// from a stale version writes nothing; an unchanged source writes nothing;
// a name is created once; a deletion removes every version; bad records
// are refused naming the field.
func testAgents(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	src1 := "name: triage\nmodel: {name: m}\nprompt: \"{{ query }}\"\n"
	src2 := src1 + "system_prompt: Be brief.\n"
	a, err := db.SaveAgent(ctx, &store.Agent{Name: "triage", Source: src1, Description: "sorts tickets", Message: "first", UpdatedBy: "ann"}, 0)
	if err != nil || a.Version != 1 || a.CreatedBy != "ann" || a.Created.IsZero() {
		t.Fatalf("create: %+v, %v", a, err)
	}
	if _, err := db.SaveAgent(ctx, &store.Agent{Name: "triage", Source: src2, UpdatedBy: "bob"}, 0); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("a second create: %v", err)
	}
	b, err := db.SaveAgent(ctx, &store.Agent{Name: "triage", Source: src2, Description: "sorts tickets", Message: "briefer", UpdatedBy: "bob"}, 1)
	if err != nil || b.Version != 2 || b.CreatedBy != "ann" || b.UpdatedBy != "bob" {
		t.Fatalf("update: %+v, %v", b, err)
	}
	if _, err := db.SaveAgent(ctx, &store.Agent{Name: "triage", Source: src1, UpdatedBy: "cy"}, 1); !errors.Is(err, store.ErrVersionConflict) || !strings.Contains(err.Error(), "version 2, not 1") {
		t.Fatalf("a save from version 1: %v", err)
	}
	same, err := db.SaveAgent(ctx, &store.Agent{Name: "triage", Source: src2, Description: "sorts tickets", UpdatedBy: "cy"}, 2)
	if err != nil || same.Version != 2 || same.UpdatedBy != "bob" {
		t.Fatalf("an unchanged save: %+v, %v", same, err)
	}
	if _, err := db.SaveAgent(ctx, &store.Agent{Name: "ghost", Source: src1}, 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an update of no agent: %v", err)
	}
	got, err := db.GetAgent(ctx, "triage")
	if err != nil || got.Version != 2 || got.Source != src2 || got.Message != "briefer" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	vs, err := db.AgentVersions(ctx, "triage")
	if err != nil || len(vs) != 2 || vs[0].Version != 2 || vs[1].Version != 1 || vs[1].Source != src1 || vs[1].Message != "first" || vs[1].UpdatedBy != "ann" {
		t.Fatalf("versions: %+v, %v", vs, err)
	}
	if _, err := db.SaveAgent(ctx, &store.Agent{Name: "other", Source: "name: other\ntool: echo\n", UpdatedBy: "ann"}, 0); err != nil {
		t.Fatal(err)
	}
	list, err := db.ListAgents(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "other" || list[1].Name != "triage" || list[1].Version != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	for _, bad := range []struct {
		a    store.Agent
		want string
	}{
		{store.Agent{Name: "", Source: src1}, "agent name"},
		{store.Agent{Name: strings.Repeat("x", 65), Source: src1}, "agent name"},
		{store.Agent{Name: "empty"}, "the definition is empty"},
		{store.Agent{Name: "huge", Source: strings.Repeat("#", store.MaxAgentSource+1)}, "over the limit"},
	} {
		if _, err := db.SaveAgent(ctx, &bad.a, 0); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.a.Name, err, bad.want)
		}
	}
	if err := db.DeleteAgent(ctx, "triage"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetAgent(ctx, "triage"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := db.AgentVersions(ctx, "triage"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("versions after delete: %v", err)
	}
	if err := db.DeleteAgent(ctx, "triage"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second delete: %v", err)
	}
	// The name is free again, from version 1.
	if a, err := db.SaveAgent(ctx, &store.Agent{Name: "triage", Source: src1}, 0); err != nil || a.Version != 1 {
		t.Fatalf("re-create: %+v, %v", a, err)
	}
}
