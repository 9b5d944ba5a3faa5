package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/chainstudio/studio/store"
)

// Users: a user is found by its token's hash and by name until removed; a
// live name cannot be taken twice but is free again after removal; bad
// names, roles and hashes are ErrInvalid and write nothing.
func testUsers(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	hash := func(tok string) []byte { h := sha256.Sum256([]byte(tok)); return h[:] }

	if us, err := db.ListUsers(ctx); err != nil || len(us) != 0 {
		t.Fatalf("empty store: %v %v", us, err)
	}
	ann, err := db.AddUser(ctx, "ann", store.RoleAdmin, hash("ann-token"))
	if err != nil {
		t.Fatal(err)
	}
	if ann.Name != "ann" || ann.Role != store.RoleAdmin || ann.Created.IsZero() {
		t.Fatalf("added %+v", ann)
	}
	if _, err := db.AddUser(ctx, "bob", store.RoleViewer, hash("bob-token")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddUser(ctx, "ann", store.RoleViewer, hash("other")); !errors.Is(err, store.ErrNameTaken) || store.ErrorCode(err) != store.ECONFLICT {
		t.Fatalf("second ann: %v", err)
	}
	for _, bad := range []struct{ name, role string }{{"", "viewer"}, {"a b", "viewer"}, {"<x>", "viewer"}, {string(make([]byte, 65)), "viewer"}, {"carl", "owner"}, {"carl", ""}} {
		if _, err := db.AddUser(ctx, bad.name, bad.role, hash("x")); store.ErrorCode(err) != store.EINVALID {
			t.Errorf("AddUser(%q, %q): %v, want invalid", bad.name, bad.role, err)
		}
	}
	if _, err := db.AddUser(ctx, "carl", store.RoleViewer, []byte("short")); store.ErrorCode(err) != store.EINVALID {
		t.Errorf("short hash: %v", err)
	}

	u, err := db.UserByTokenHash(ctx, hash("bob-token"))
	if err != nil || u.Name != "bob" || u.Role != store.RoleViewer {
		t.Fatalf("bob by token: %+v %v", u, err)
	}
	if _, err := db.UserByTokenHash(ctx, hash("nobody")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown token: %v", err)
	}
	us, err := db.ListUsers(ctx)
	if err != nil || len(us) != 2 || us[0].Name != "ann" || us[1].Name != "bob" {
		t.Fatalf("list: %+v %v", us, err)
	}

	if u, err := db.SetUserRole(ctx, "bob", store.RoleEditor); err != nil || u.Role != store.RoleEditor {
		t.Fatalf("set role: %+v %v", u, err)
	}
	if u, _ := db.GetUser(ctx, "bob"); u == nil || u.Role != store.RoleEditor {
		t.Fatalf("role not kept: %+v", u)
	}
	if _, err := db.SetUserRole(ctx, "bob", "root"); store.ErrorCode(err) != store.EINVALID {
		t.Fatalf("bad role: %v", err)
	}
	if _, err := db.SetUserRole(ctx, "zed", store.RoleEditor); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("set role of nobody: %v", err)
	}

	if err := db.RemoveUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UserByTokenHash(ctx, hash("bob-token")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removed user's token still works: %v", err)
	}
	if _, err := db.GetUser(ctx, "bob"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removed user still found: %v", err)
	}
	if err := db.RemoveUser(ctx, "bob"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
	if _, err := db.SetUserRole(ctx, "bob", store.RoleAdmin); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("role of a removed user: %v", err)
	}
	// The name is free again, with a new token; the old one stays dead.
	if _, err := db.AddUser(ctx, "bob", store.RoleApprover, hash("bob-2")); err != nil {
		t.Fatalf("re-add bob: %v", err)
	}
	if u, err := db.UserByTokenHash(ctx, hash("bob-2")); err != nil || u.Role != store.RoleApprover {
		t.Fatalf("new bob: %+v %v", u, err)
	}
	if _, err := db.UserByTokenHash(ctx, hash("bob-token")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("old bob token: %v", err)
	}
}

// LastAdmin: while users exist one of them is an admin. Demoting or
// removing the last admin is ECONFLICT and changes nothing, also when two
// admins demote (or remove) each other at the same moment: exactly one of
// the two changes wins, every try. Removing the very last user is allowed.
func testLastAdmin(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	hash := func(tok string) []byte { h := sha256.Sum256([]byte(tok)); return h[:] }
	if _, err := db.AddUser(ctx, "ann", store.RoleAdmin, hash("ann")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddUser(ctx, "bob", store.RoleViewer, hash("bob")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetUserRole(ctx, "ann", store.RoleEditor); store.ErrorCode(err) != store.ECONFLICT {
		t.Fatalf("demote the last admin: %v, want conflict", err)
	}
	if err := db.RemoveUser(ctx, "ann"); store.ErrorCode(err) != store.ECONFLICT {
		t.Fatalf("remove the last admin: %v, want conflict", err)
	}
	if u, _ := db.GetUser(ctx, "ann"); u == nil || u.Role != store.RoleAdmin {
		t.Fatalf("a refused change changed ann: %+v", u)
	}
	admins := func() []string {
		t.Helper()
		us, err := db.ListUsers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range us {
			if u.Role == store.RoleAdmin {
				out = append(out, u.Name)
			}
		}
		return out
	}
	prev := "ann" // the one admin before each try
	for try := range 20 {
		a, b := fmt.Sprintf("a%d", try), fmt.Sprintf("b%d", try)
		for _, n := range []string{a, b} {
			if _, err := db.AddUser(ctx, n, store.RoleAdmin, hash(n)); err != nil {
				t.Fatal(err)
			}
		}
		// a and b become the only two admins.
		if _, err := db.SetUserRole(ctx, prev, store.RoleViewer); err != nil {
			t.Fatalf("try %d: demote %s with two admins left: %v", try, prev, err)
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for k, other := range []string{b, a} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if try%2 == 0 { // demote each other
					_, errs[k] = db.SetUserRole(ctx, other, store.RoleEditor)
				} else { // remove each other
					errs[k] = db.RemoveUser(ctx, other)
				}
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case store.ErrorCode(err) != store.ECONFLICT:
				t.Fatalf("try %d: %v", try, err)
			}
		}
		got := admins()
		if won != 1 || len(got) != 1 {
			t.Fatalf("try %d: %d of 2 changes won (%v), admins now %v: want exactly one admin", try, won, errs, got)
		}
		prev = got[0]
	}
	// The last user of all may go: the studio is open again.
	us, _ := db.ListUsers(ctx)
	for _, u := range us {
		if u.Name != prev {
			if err := db.RemoveUser(ctx, u.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.RemoveUser(ctx, prev); err != nil {
		t.Fatalf("remove the only user left: %v", err)
	}
}
