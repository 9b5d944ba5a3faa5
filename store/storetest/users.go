package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
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
