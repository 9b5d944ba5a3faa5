package storetest

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/seal"
	"github.com/chainstudio/studio/store/vault"
)

// Day budgets of schedules, hooks and credentials round-trip, are read
// alone by id or name (zero when there is none, or no such record), and
// survive a credential's update that does not name them.
func testBudgets(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	ch, err := db.CreateChain(ctx, SampleChain("budgeted", 1), "", true)
	if err != nil {
		t.Fatal(err)
	}
	want := store.DayBudget{Tokens: 5000, Cost: 1.25}
	s, err := db.CreateSchedule(ctx, store.Schedule{ID: "sb", ChainID: ch.ID, Cron: "@daily", Overlap: store.OverlapSkip, CatchUp: store.CatchUpSkip, Budget: want})
	if err != nil || s.Budget != want {
		t.Fatalf("schedule: %+v %v", s, err)
	}
	s.Budget = store.DayBudget{Tokens: 10}
	if s, err = db.UpdateSchedule(ctx, *s); err != nil || s.Budget != (store.DayBudget{Tokens: 10}) {
		t.Fatalf("updated schedule: %+v %v", s, err)
	}
	if _, err := db.CreateHook(ctx, store.Hook{ID: "hb", ChainID: ch.ID, Secret: "x", Budget: want}); err != nil {
		t.Fatal(err)
	}
	if hs, err := db.ListHooks(ctx, ch.ID); err != nil || len(hs) != 1 || hs[0].Budget != want {
		t.Fatalf("hooks: %+v %v", hs, err)
	}
	for id, w := range map[string]store.DayBudget{"sb": {Tokens: 10}, "hb": want, "none": {}} {
		if got, err := db.TriggerBudget(ctx, id); err != nil || got != w {
			t.Fatalf("TriggerBudget(%s) = %+v %v, want %+v", id, got, err, w)
		}
	}

	key, _, _ := seal.Generate()
	v, err := vault.Open(ctx, db, key, vault.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Add(ctx, "ann", vault.Input{Name: "llm", Type: credential.Bearer, Values: credential.Values{"token": "t"}, Budget: want}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Update(ctx, "ann", "llm", vault.Change{Values: credential.Values{"token": "u"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.CredentialBudget(ctx, "llm"); err != nil || got != want {
		t.Fatalf("CredentialBudget = %+v %v", got, err)
	}
	if got, err := db.CredentialBudget(ctx, "none"); err != nil || !got.IsZero() {
		t.Fatalf("CredentialBudget(none) = %+v %v", got, err)
	}
	if list, err := db.ListCredentials(ctx); err != nil || len(list) != 1 || list[0].Budget != want {
		t.Fatalf("list: %+v %v", list, err)
	}
}
