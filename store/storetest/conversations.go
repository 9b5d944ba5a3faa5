package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/store"
)

// Conversations: turns come back oldest first within the limit, with the
// session's total; an append under a key already used writes nothing, even
// when concurrent; sessions list newest first, by scope; a long turn is cut
// with a note; a session keeps at most MaxConversationTurns; clearing
// deletes one session only.
func testConversations(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 4, 5, 6, 7, 8000, time.UTC)
	pair := func(q, a string, when time.Time) []store.ConversationTurn {
		return []store.ConversationTurn{{Role: "user", Text: q, At: when}, {Role: "assistant", Text: a, At: when}}
	}
	for i := 1; i <= 3; i++ {
		if err := db.AppendTurns(ctx, "helper", "ada", fmt.Sprintf("run%d/a/1/-1", i), pair(fmt.Sprintf("q%d", i), fmt.Sprintf("a%d", i), at.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	// replayed: the same key again writes nothing
	if err := db.AppendTurns(ctx, "helper", "ada", "run2/a/1/-1", pair("q2 again", "a2 again", at.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	turns, total, err := db.LoadTurns(ctx, "helper", "ada", 4)
	if err != nil || total != 6 || len(turns) != 4 {
		t.Fatalf("load: %v, total %d, %+v", err, total, turns)
	}
	var said []string
	for _, tr := range turns {
		said = append(said, tr.Role+":"+tr.Text)
	}
	if got := strings.Join(said, " "); got != "user:q2 assistant:a2 user:q3 assistant:a3" {
		t.Fatalf("turns %s", got)
	}
	if !turns[0].At.Equal(at.Add(2*time.Minute)) || turns[0].ID == 0 || turns[1].ID <= turns[0].ID {
		t.Fatalf("turn records %+v", turns)
	}

	// concurrent appends under one key: one of them writes
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := db.AppendTurns(ctx, "support:ask", "s1", "run9/ask/1/-1", pair("hello", "hi", at)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if _, n, err := db.LoadTurns(ctx, "support:ask", "s1", 10); err != nil || n != 2 {
		t.Fatalf("after concurrent appends of one key: %d turns, %v", n, err)
	}
	if err := db.AppendTurns(ctx, "helper", "bob", "r/a/1/-1", pair("b", strings.Repeat("é", store.MaxConversationText), at.Add(2*time.Hour))); err != nil {
		t.Fatal(err)
	}
	bob, _, err := db.LoadTurns(ctx, "helper", "bob", 10)
	if err != nil || len(bob) != 2 {
		t.Fatalf("bob: %+v %v", bob, err)
	}
	if long := bob[1].Text; len(long) > store.MaxConversationText+100 || !strings.Contains(long, "it was cut at") {
		t.Fatalf("a long turn kept %d bytes: %q", len(long), long[len(long)-80:])
	}

	list, err := db.ListConversations(ctx, store.ConversationFilter{})
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if l := list[0]; l.Scope != "helper" || l.Session != "bob" || l.Turns != 2 || !l.LastAt.Equal(at.Add(2*time.Hour)) {
		t.Fatalf("newest first: %+v", list)
	}
	if l := list[1]; l.Session != "ada" || l.Turns != 6 || !l.LastAt.Equal(at.Add(3*time.Minute)) {
		t.Fatalf("ada: %+v", list)
	}
	if l, err := db.ListConversations(ctx, store.ConversationFilter{Scope: "support:ask"}); err != nil || len(l) != 1 || l[0].Session != "s1" {
		t.Fatalf("by scope: %+v %v", l, err)
	}
	if l, err := db.ListConversations(ctx, store.ConversationFilter{Limit: 1}); err != nil || len(l) != 1 {
		t.Fatalf("limit 1: %+v %v", l, err)
	}

	if n, err := db.ClearConversation(ctx, "helper", "ada"); err != nil || n != 6 {
		t.Fatalf("clear: %d %v", n, err)
	}
	if _, err := db.ClearConversation(ctx, "helper", "ada"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("clear again: %v", err)
	}
	if _, n, _ := db.LoadTurns(ctx, "helper", "bob", 10); n != 2 {
		t.Fatalf("clearing ada touched bob: %d", n)
	}
	if err := db.AppendTurns(ctx, "", "x", "k", pair("q", "a", at)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("empty scope: %v", err)
	}
	if err := db.AppendTurns(ctx, "helper", strings.Repeat("s", store.MaxConversationName+1), "k", pair("q", "a", at)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("long session: %v", err)
	}
	long := strings.Repeat("c", store.MaxConversationScope/2) + ":" + strings.Repeat("n", store.MaxConversationScope/2-1)
	if err := db.AppendTurns(ctx, long, "s", "k", pair("q", "a", at)); err != nil {
		t.Fatalf("a scope of %d bytes: %v", len(long), err)
	}
	if err := db.AppendTurns(ctx, long+"x", "s", "k", pair("q", "a", at)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a scope over the limit: %v", err)
	}
}

// A session keeps its newest MaxConversationTurns turns.
func testConversationBound(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	const batch = 100
	for i := 0; i*batch < store.MaxConversationTurns+batch; i++ {
		turns := make([]store.ConversationTurn, batch)
		for j := range turns {
			turns[j] = store.ConversationTurn{Role: "user", Text: fmt.Sprint(i*batch + j), At: at}
		}
		if err := db.AppendTurns(ctx, "helper", "ada", fmt.Sprint("k", i), turns); err != nil {
			t.Fatal(err)
		}
	}
	turns, total, err := db.LoadTurns(ctx, "helper", "ada", 1)
	if err != nil || total != store.MaxConversationTurns || len(turns) != 1 || turns[0].Text != fmt.Sprint(store.MaxConversationTurns+batch-1) {
		t.Fatalf("kept %d, newest %+v, %v", total, turns, err)
	}
	all, _, _ := db.LoadTurns(ctx, "helper", "ada", store.MaxConversationTurns)
	if all[0].Text != fmt.Sprint(batch) {
		t.Fatalf("oldest kept %q, want %d", all[0].Text, batch)
	}
}

// Conversations follow the runs' retention: turns kept before the cutoff
// are deleted, newer ones stay, across sessions and scopes.
func testConversationPrune(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recent := old.Add(48 * time.Hour)
	for k, at := range []time.Time{old, old, recent} {
		turns := []store.ConversationTurn{{Role: "user", Text: "q", At: at}, {Role: "assistant", Text: "a", At: at}}
		if err := db.AppendTurns(ctx, "agent-"+string(rune('a'+k)), "s", "key", turns); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.PruneConversations(ctx, old.Add(24*time.Hour))
	if err != nil || n != 4 {
		t.Fatalf("pruned %d, %v; want the 4 old turns", n, err)
	}
	for scope, want := range map[string]int{"agent-a": 0, "agent-b": 0, "agent-c": 2} {
		if _, total, err := db.LoadTurns(ctx, scope, "s", 10); err != nil || total != want {
			t.Errorf("%s keeps %d turns (%v), want %d", scope, total, err, want)
		}
	}
}
