package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlstore"
)

// The credentials tables: the SQL is shared with the other backend
// (sqlstore/credentials.go); this file only gives it transactions.

// AddCredential stores a new credential; a name in use is ErrNameTaken.
func (db *DB) AddCredential(ctx context.Context, c *store.SealedCredential) error {
	err := db.writeTx(ctx, func(tx *Tx) error { return sqlstore.AddCredential(ctx, tx, c) })
	if isUniqueViolation(err) { // a concurrent add of the same name
		return fmt.Errorf("credential %q already exists: %w", c.Name, store.ErrNameTaken)
	}
	return err
}

// UpdateCredential replaces the credential with c's id.
func (db *DB) UpdateCredential(ctx context.Context, c *store.SealedCredential) error {
	return db.writeTx(ctx, func(tx *Tx) error { return sqlstore.UpdateCredential(ctx, tx, c) })
}

// GetCredential returns the credential named name.
func (db *DB) GetCredential(ctx context.Context, name string) (*store.SealedCredential, error) {
	return sqlstore.GetCredential(ctx, db.r, name)
}

// ListCredentials lists the credentials by name.
func (db *DB) ListCredentials(ctx context.Context) ([]store.Credential, error) {
	return sqlstore.ListCredentials(ctx, db.r)
}

// RemoveCredential deletes the credential named name.
func (db *DB) RemoveCredential(ctx context.Context, name string) error {
	return db.writeTx(ctx, func(tx *Tx) error { return sqlstore.RemoveCredential(ctx, tx, name) })
}

// TouchCredential records that a run used a credential.
func (db *DB) TouchCredential(ctx context.Context, id string, at time.Time) error {
	return db.writeTx(ctx, func(tx *Tx) error { return sqlstore.TouchCredential(ctx, tx, id, at) })
}

// CredentialKeyCheck returns the key check, nil before the first credential.
func (db *DB) CredentialKeyCheck(ctx context.Context) ([]byte, error) {
	return sqlstore.CredentialKeyCheck(ctx, db.r)
}

// SetCredentialKeyCheck stores the key check once.
func (db *DB) SetCredentialKeyCheck(ctx context.Context, check []byte) error {
	return db.writeTx(ctx, func(tx *Tx) error { return sqlstore.SetCredentialKeyCheck(ctx, tx, check) })
}

// ResealCredentials re-encrypts every credential in one transaction.
func (db *DB) ResealCredentials(ctx context.Context, reseal func(id, field string, sealed []byte) ([]byte, error), check []byte) error {
	return db.writeTx(ctx, func(tx *Tx) error { return sqlstore.ResealCredentials(ctx, tx, reseal, check) })
}
