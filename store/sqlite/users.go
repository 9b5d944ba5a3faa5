package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlstore"
)

// The users table (issue #17): the SQL is shared with the other backend
// (sqlstore/users.go); this file only gives it transactions.

// AddUser stores a new user with the SHA-256 of its token.
func (db *DB) AddUser(ctx context.Context, name, role string, tokenHash []byte) (*store.User, error) {
	var u *store.User
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		u, err = sqlstore.AddUser(ctx, tx, name, role, tokenHash, micros(db.now()))
		return err
	})
	if isUniqueViolation(err) { // a concurrent add of the same name
		return nil, fmt.Errorf("user %q already exists: %w", name, store.ErrNameTaken)
	}
	return u, err
}

// UserByTokenHash returns the live user whose token has this SHA-256.
func (db *DB) UserByTokenHash(ctx context.Context, tokenHash []byte) (*store.User, error) {
	return sqlstore.UserByTokenHash(ctx, db.r, tokenHash)
}

// GetUser returns the live user named name.
func (db *DB) GetUser(ctx context.Context, name string) (*store.User, error) {
	return sqlstore.GetUser(ctx, db.r, name)
}

// ListUsers lists the live users by name.
func (db *DB) ListUsers(ctx context.Context) ([]store.User, error) {
	return sqlstore.ListUsers(ctx, db.r)
}

// SetUserRole changes a live user's role.
func (db *DB) SetUserRole(ctx context.Context, name, role string) (*store.User, error) {
	var u *store.User
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		u, err = sqlstore.SetUserRole(ctx, tx, lockAdmins, name, role)
		return err
	})
	return u, err
}

// RemoveUser removes a live user; its token stops working at once.
func (db *DB) RemoveUser(ctx context.Context, name string) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		return sqlstore.RemoveUser(ctx, tx, lockAdmins, name, micros(db.now()))
	})
}

// lockAdmins: see sqlstore.LockAdmins.
const lockAdmins sqlstore.LockAdmins = ""
