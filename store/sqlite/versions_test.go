package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/google/uuid"
)

// createChainOldSchema stores doc as a chain with one version per message,
// row for row as a store before schema 3 wrote them (chain_versions had no
// kind column).
func createChainOldSchema(ctx context.Context, db *DB, doc *chain.Chain, messages ...string) (*store.Chain, error) {
	ch := &store.Chain{ID: uuid.NewString(), Name: doc.Name, Version: len(messages), NodeCount: len(doc.Nodes), Doc: doc}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	err = db.writeTx(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(`INSERT INTO chains (id, name, description, current_version, node_count, created_at, updated_at) VALUES (?, ?, '', ?, ?, 1, 1)`,
			ch.ID, doc.Name, len(messages), len(doc.Nodes)); err != nil {
			return err
		}
		for i, m := range messages {
			if _, err := tx.Exec(`INSERT INTO chain_versions (chain_id, version, name, node_count, message, doc, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				ch.ID, i+1, doc.Name, len(doc.Nodes), m, string(body), int64(i+1)*1_000_000); err != nil {
				return err
			}
		}
		return nil
	})
	return ch, err
}

// A database made by schema 2 opens with schema 3: the designer's autosaves
// (told apart then only by their message) become kind autosave, every other
// version kind save, and nothing else changes.
func TestMigrateVersionKinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	db, err := Open(ctx, path, Options{schemaUpTo: 2})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []string{"created", "edited in the designer", "edited in the designer", "restored version 1", "edited in the designer"}
	ch, err := createChainOldSchema(ctx, db, sampleChain("old history", 3), msgs...)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vs, err := db.ListVersions(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.VersionKind{store.VersionAutosave, store.VersionSave, store.VersionAutosave, store.VersionAutosave, store.VersionSave} // newest first
	if len(vs) != len(want) {
		t.Fatalf("%d versions, want %d", len(vs), len(want))
	}
	for i, v := range vs {
		if v.Kind != want[i] || v.Message != msgs[len(msgs)-1-i] {
			t.Errorf("v%d: kind %q message %q, want %q %q", v.Version, v.Kind, v.Message, want[i], msgs[len(msgs)-1-i])
		}
	}
	got, err := db.GetVersion(ctx, ch.ID, 2)
	if err != nil || got.Kind != store.VersionAutosave || len(got.Doc.Nodes) != 3 {
		t.Fatalf("GetVersion after migration: %+v %v", got, err)
	}
	// And the migrated chain takes new versions of every kind.
	if _, err := db.SaveChainAs(ctx, ch.ID, 5, sampleChain("old history", 4), "edited in the designer", store.VersionAutosave); err != nil {
		t.Fatal(err)
	}
	if n, err := db.NameVersion(ctx, ch.ID, 6, "after the move"); err != nil || n.Version != 7 {
		t.Fatalf("NameVersion: %+v %v", n, err)
	}
}
