package storetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/seal"
	"github.com/chainstudio/studio/store/vault"
)

// Credentials: the store keeps only sealed values; names are unique; the
// vault over the backend resolves a credential only for the chains it
// allows; a rotation re-seals everything in one go, after which only the
// new key opens them; a wrong key is told when the vault opens.
func testCredentials(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	key, _, _ := seal.Generate()
	v, err := vault.Open(ctx, db, key, vault.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const token = "ghp_secret-value-1234567890"
	gh, err := v.Add(ctx, "ann", vault.Input{Name: "github", Type: credential.Bearer, Values: credential.Values{"token": token}})
	if err != nil {
		t.Fatal(err)
	}
	if gh.ID == "" || gh.CreatedBy != "ann" || gh.Created.IsZero() || len(gh.Set) != 1 || gh.Set[0] != "token" {
		t.Fatalf("added %+v", gh)
	}
	if _, err := v.Add(ctx, "ann", vault.Input{Name: "github", Type: credential.Bearer, Values: credential.Values{"token": "x"}}); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("a second github: %v", err)
	}
	for name, in := range map[string]vault.Input{
		"bad name":      {Name: "a b", Type: credential.Bearer, Values: credential.Values{"token": "x"}},
		"unknown type":  {Name: "x", Type: "oauth9", Values: credential.Values{"token": "x"}},
		"missing field": {Name: "x", Type: credential.Basic, Values: credential.Values{"username": "u"}},
		"unknown field": {Name: "x", Type: credential.Bearer, Values: credential.Values{"token": "x", "extra": "y"}},
		"line break":    {Name: "x", Type: credential.Bearer, Values: credential.Values{"token": "a\r\nX-Evil: 1"}},
		"bad header":    {Name: "x", Type: credential.Headers, Values: credential.Values{"headers": map[string]any{"bad name": "v"}}},
		"bad enum":      {Name: "x", Type: credential.APIKey, Values: credential.Values{"in": "cookie", "name": "k", "value": "v"}},
		"bad base URL":  {Name: "x", Type: credential.OpenAICompatible, Values: credential.Values{"base_url": "ftp://h"}},
	} {
		if _, err := v.Add(ctx, "ann", in); store.ErrorCode(err) != store.EINVALID {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if cs, _ := db.ListCredentials(ctx); len(cs) != 1 {
		t.Fatalf("refused adds wrote something: %+v", cs)
	}

	raw, err := db.GetCredential(ctx, "github")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw.Sealed["token"], []byte(token)) || len(raw.Sealed["token"]) == 0 {
		t.Fatal("the store holds the token in clear")
	}

	// Limited to one chain.
	key2, err := v.Add(ctx, "ann", vault.Input{Name: "svc", Type: credential.APIKey, Chains: []string{"chain-a"},
		Values: credential.Values{"in": "header", "name": "X-API-Key", "value": "svc-secret-abcdef"}})
	if err != nil {
		t.Fatal(err)
	}
	if key2.Public["name"] != "X-API-Key" || key2.Public["in"] != "header" {
		t.Fatalf("public fields: %+v", key2.Public)
	}
	if s, err := v.ForChain("chain-a").Credential(ctx, "svc"); err != nil || s.Values["value"] != "svc-secret-abcdef" {
		t.Fatalf("allowed chain: %+v %v", s, err)
	}
	if _, err := v.ForChain("chain-b").Credential(ctx, "svc"); err == nil || !strings.Contains(err.Error(), "may not be used by this chain") {
		t.Fatalf("another chain: %v", err)
	}
	if _, err := v.ForChain("").Credential(ctx, "nope"); store.ErrorCode(err) != store.ENOTFOUND {
		t.Fatalf("unknown credential: %v", err)
	}
	if s, err := v.ForChain("").Credential(ctx, "github"); err != nil || s.Values["token"] != token || s.Type != credential.Bearer {
		t.Fatalf("resolve: %+v %v", s, err)
	}
	if c, _ := v.Get(ctx, "github"); c.LastUsed.IsZero() {
		t.Fatal("a use was not recorded")
	}

	// An update keeps the fields it does not name.
	if _, err := v.Update(ctx, "bob", "svc", vault.Change{Values: credential.Values{"name": "X-Key"}}); err != nil {
		t.Fatal(err)
	}
	if s, _ := v.ForChain("chain-a").Credential(ctx, "svc"); s.Values["value"] != "svc-secret-abcdef" || s.Values["name"] != "X-Key" {
		t.Fatalf("after update: %+v", s.Values)
	}
	// Allowed hosts: checked, cleaned, kept and handed to the resolver.
	hosts := []string{"API.example.com", "https://gw.example.net/v1"}
	if c, err := v.Update(ctx, "bob", "svc", vault.Change{Hosts: &hosts}); err != nil || strings.Join(c.Hosts, " ") != "api.example.com https://gw.example.net/v1" {
		t.Fatalf("hosts: %+v %v", c, err)
	}
	if s, _ := v.ForChain("chain-a").Credential(ctx, "svc"); strings.Join(s.Hosts, " ") != "api.example.com https://gw.example.net/v1" {
		t.Fatalf("resolved hosts: %+v", s.Hosts)
	}
	bad := []string{"*.com"}
	if _, err := v.Update(ctx, "bob", "svc", vault.Change{Hosts: &bad}); store.ErrorCode(err) != store.EINVALID || !strings.Contains(err.Error(), `"*.com"`) {
		t.Fatalf("a bad host: %v", err)
	}
	open2 := []string{}
	if c, err := v.Update(ctx, "bob", "svc", vault.Change{Chains: &open2}); err != nil || len(c.Chains) != 0 || c.UpdatedBy != "bob" {
		t.Fatalf("open to all: %+v %v", c, err)
	}
	if _, err := v.Update(ctx, "bob", "svc", vault.Change{Values: credential.Values{"value": ""}}); store.ErrorCode(err) != store.EINVALID {
		t.Fatalf("emptying a required field: %v", err)
	}

	// A wrong key is told at once.
	other, _, _ := seal.Generate()
	if _, err := vault.Open(ctx, db, other, vault.Options{}); err == nil || !strings.Contains(err.Error(), "another key") {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := vault.Open(ctx, db, nil, vault.Options{}); err == nil {
		t.Fatal("no key over sealed credentials opened")
	}

	// Rotation.
	next, _, _ := seal.Generate()
	if err := v.Rotate(ctx, next); err != nil {
		t.Fatal(err)
	}
	if s, err := v.ForChain("").Credential(ctx, "github"); err != nil || s.Values["token"] != token {
		t.Fatalf("after rotation: %+v %v", s, err)
	}
	if _, err := vault.Open(ctx, db, key, vault.Options{}); err == nil {
		t.Fatal("the old key still opens the database after a rotation")
	}
	if _, err := vault.Open(ctx, db, next, vault.Options{}); err != nil {
		t.Fatalf("the new key: %v", err)
	}

	if err := v.Remove(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if err := v.Remove(ctx, "svc"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
	if cs, _ := v.List(ctx); len(cs) != 1 || cs[0].Name != "github" {
		t.Fatalf("list: %+v", cs)
	}
}
