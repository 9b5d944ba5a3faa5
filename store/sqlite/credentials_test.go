package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/store/seal"
	"github.com/chainstudio/studio/store/vault"
)

// One record whose sealed fields do not decode lists as unreadable, beside
// the sound ones; validation says it cannot be read, not that it is missing.
func TestCorruptCredentialListsAsUnreadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTest(t)
	key, _, _ := seal.Generate()
	v, err := vault.Open(ctx, db, key, vault.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"good", "broken"} {
		if _, err := v.Add(ctx, "ann", vault.Input{Name: name, Type: credential.Bearer, Values: credential.Values{"token": "tok-" + name}, Hosts: []string{"api.example.com"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE credentials SET sealed_fields = '{"token":"%%% not base64"}' WHERE name = 'broken'`); err != nil {
		t.Fatal(err)
	}
	list, err := v.List(ctx)
	if err != nil {
		t.Fatalf("one corrupt record fails the whole list: %v", err)
	}
	if len(list) != 2 || list[0].Name != "broken" || list[0].Unreadable == "" || list[1].Name != "good" || list[1].Unreadable != "" {
		t.Fatalf("list: %+v", list)
	}
	if got, err := v.Get(ctx, "broken"); err != nil || got.Unreadable == "" {
		t.Fatalf("get of the unreadable one: %+v %v", got, err)
	}
	cu := v.Usable(ctx, "", "broken")
	if !cu.Found || cu.Unreadable == "" {
		t.Fatalf("usable: %+v, want found and unreadable", cu)
	}
	if _, err := v.ForChain("").Credential(ctx, "broken"); err == nil || strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("resolving the unreadable one: %v", err)
	}
}

// A credential stored before allowed hosts existed has none: an HTTP one is
// sent nowhere until an admin sets them, a provider key goes to its
// provider's API only.
func TestCredentialsBeforeHostsHaveNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	before := fstest.MapFS{}
	for _, m := range migrations() {
		if strings.HasSuffix(m.Name, "_add_credential_hosts.sql") {
			break
		}
		before[m.Name] = &fstest.MapFile{Data: []byte(m.SQL)}
	}
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(ctx, path, Options{migrationFiles: before})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO credentials (id, name, type, public_fields, sealed_fields, chains, created_by, created_at, updated_by, updated_at)
VALUES ('c1', 'old', 'bearer', '{}', '{}', '[]', 'ann', 1, 'ann', 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.GetCredential(ctx, "old")
	if err != nil || len(c.Hosts) != 0 {
		t.Fatalf("%+v %v", c, err)
	}
	key, _, _ := seal.Generate()
	v, err := vault.Open(ctx, db, key, vault.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cu := v.Usable(ctx, "", "old"); !cu.NoHosts {
		t.Fatalf("an HTTP credential without hosts: %+v", cu)
	}
}
