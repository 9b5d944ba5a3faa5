package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/chainstudio/studio/store"
)

// Execer runs queries and writes: a backend's write transaction.
type Execer interface {
	Queryer
	Writer
}

// tokenHashHex is the stored form of a token's SHA-256: 64 hex digits.
func tokenHashHex(h []byte) (string, error) {
	if len(h) != sha256.Size {
		return "", store.Errorf(store.EINVALID, "token hash: want %d bytes (SHA-256), got %d", sha256.Size, len(h))
	}
	return hex.EncodeToString(h), nil
}

// addUser inserts a live user after checking its name, role and hash; a
// live user of that name is ErrNameTaken. now is unix microseconds.
func addUser(ctx context.Context, tx Execer, name, role string, tokenHash []byte, now int64) (*store.User, error) {
	if err := store.CheckUser(name, role); err != nil {
		return nil, err
	}
	h, err := tokenHashHex(tokenHash)
	if err != nil {
		return nil, err
	}
	if _, err := userWhere(ctx, tx, `name = ?`, name); err == nil {
		return nil, fmt.Errorf("user %q already exists: %w", name, store.ErrNameTaken)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO users (name, role, token_hash, created_at) VALUES (?, ?, ?, ?)`,
		name, role, h, now); err != nil {
		return nil, fmt.Errorf("store: add user %q: %w", name, err)
	}
	return &store.User{Name: name, Role: role, Created: time.UnixMicro(now).UTC()}, nil
}

// userByTokenHash finds the live user whose token has this SHA-256.
func userByTokenHash(ctx context.Context, q Queryer, tokenHash []byte) (*store.User, error) {
	h, err := tokenHashHex(tokenHash)
	if err != nil {
		return nil, err
	}
	u, err := userWhere(ctx, q, `token_hash = ?`, h)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no user has this token", store.ErrNotFound)
	}
	return u, err
}

// getUser finds the live user named name.
func getUser(ctx context.Context, q Queryer, name string) (*store.User, error) {
	u, err := userWhere(ctx, q, `name = ?`, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no user named %q", store.ErrNotFound, name)
	}
	return u, err
}

func userWhere(ctx context.Context, q Queryer, cond string, arg any) (*store.User, error) {
	us, err := users(ctx, q, `SELECT name, role, created_at FROM users WHERE removed_at IS NULL AND `+cond, arg)
	if err != nil {
		return nil, err
	}
	if len(us) == 0 {
		return nil, store.ErrNotFound
	}
	return &us[0], nil
}

// listUsers lists the live users by name.
func listUsers(ctx context.Context, q Queryer) ([]store.User, error) {
	return users(ctx, q, `SELECT name, role, created_at FROM users WHERE removed_at IS NULL ORDER BY name`)
}

func users(ctx context.Context, q Queryer, query string, args ...any) ([]store.User, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read users: %w", err)
	}
	defer rows.Close()
	var out []store.User
	for rows.Next() {
		var u store.User
		var created int64
		if err := rows.Scan(&u.Name, &u.Role, &created); err != nil {
			return nil, fmt.Errorf("store: read users: %w", err)
		}
		u.Created = time.UnixMicro(created).UTC()
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read users: %w", err)
	}
	return out, nil
}

// LockAdmins is what SetUserRole and RemoveUser append to the query that
// reads the live admins before a change: "" where the backend's write
// transactions are serial already (SQLite's one writer, BEGIN IMMEDIATE),
// " FOR UPDATE" on PostgreSQL, so that two admins changing each other at
// once are serialized on the admin rows and the second sees the first's
// change.
type LockAdmins string

// keepAnAdmin locks the live admins' rows (lock), runs change, and refuses
// it (rolling back with the caller's transaction) when it left live users
// but no admin among them: nobody could manage users any more. Removing
// the last user of all is allowed (the studio is open again).
func keepAnAdmin(ctx context.Context, tx Execer, lock LockAdmins, name, what string, change func() error) error {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM users WHERE removed_at IS NULL AND role = ? ORDER BY name`+string(lock), store.RoleAdmin)
	if err != nil {
		return fmt.Errorf("store: read the admins: %w", err)
	}
	for rows.Next() { // every row read: each is locked as it is returned
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("store: read the admins: %w", err)
	}
	if err := change(); err != nil {
		return err
	}
	var admins, live int
	rows, err = tx.QueryContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN role = ? THEN 1 ELSE 0 END), 0) FROM users WHERE removed_at IS NULL`, store.RoleAdmin)
	if err == nil {
		if rows.Next() {
			err = rows.Scan(&live, &admins)
		}
		if rerr := rows.Err(); err == nil {
			err = rerr
		}
		rows.Close()
	}
	if err != nil {
		return fmt.Errorf("store: count the admins: %w", err)
	}
	if live > 0 && admins == 0 {
		return store.Errorf(store.ECONFLICT, "cannot %s user %q: it is the last admin, and a studio with users needs one to manage them; make another user admin first", what, name)
	}
	return nil
}

// setUserRole changes a live user's role; a change that leaves no admin
// among the live users is refused (ECONFLICT).
func setUserRole(ctx context.Context, tx Execer, lock LockAdmins, name, role string) (*store.User, error) {
	if err := store.CheckRole(role); err != nil {
		return nil, err
	}
	err := keepAnAdmin(ctx, tx, lock, name, "demote", func() error { return setRole(ctx, tx, name, role) })
	if err != nil {
		return nil, err
	}
	return getUser(ctx, tx, name)
}

func setRole(ctx context.Context, tx Execer, name, role string) error {
	res, err := tx.ExecContext(ctx, `UPDATE users SET role = ? WHERE name = ? AND removed_at IS NULL`, role, name)
	if err != nil {
		return fmt.Errorf("store: set the role of user %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: no user named %q", store.ErrNotFound, name)
	}
	return nil
}

// removeUser marks a live user removed (now: unix microseconds); removing
// the last admin while other users remain is refused (ECONFLICT).
func removeUser(ctx context.Context, tx Execer, lock LockAdmins, name string, now int64) error {
	return keepAnAdmin(ctx, tx, lock, name, "remove", func() error { return markRemoved(ctx, tx, name, now) })
}

func markRemoved(ctx context.Context, tx Execer, name string, now int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE users SET removed_at = ? WHERE name = ? AND removed_at IS NULL`, now, name)
	if err != nil {
		return fmt.Errorf("store: remove user %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: no user named %q", store.ErrNotFound, name)
	}
	return nil
}

// AddUser stores a new user with the SHA-256 of its token.
func (s *Store) AddUser(ctx context.Context, name, role string, tokenHash []byte) (*store.User, error) {
	var u *store.User
	err := s.writeTx(ctx, func(tx *Tx) error {
		var err error
		u, err = addUser(ctx, tx, name, role, tokenHash, Micros(s.now()))
		return err
	})
	if s.d.IsUniqueViolation(err) { // a concurrent add of the same name
		return nil, fmt.Errorf("user %q already exists: %w", name, store.ErrNameTaken)
	}
	return u, err
}

// UserByTokenHash returns the live user whose token has this SHA-256.
func (s *Store) UserByTokenHash(ctx context.Context, tokenHash []byte) (*store.User, error) {
	return userByTokenHash(ctx, s.r, tokenHash)
}

// GetUser returns the live user named name.
func (s *Store) GetUser(ctx context.Context, name string) (*store.User, error) {
	return getUser(ctx, s.r, name)
}

// ListUsers lists the live users by name.
func (s *Store) ListUsers(ctx context.Context) ([]store.User, error) {
	return listUsers(ctx, s.r)
}

// SetUserRole changes a live user's role.
func (s *Store) SetUserRole(ctx context.Context, name, role string) (*store.User, error) {
	var u *store.User
	err := s.writeTx(ctx, func(tx *Tx) error {
		var err error
		u, err = setUserRole(ctx, tx, s.lock, name, role)
		return err
	})
	return u, err
}

// RemoveUser removes a live user; its token stops working at once.
func (s *Store) RemoveUser(ctx context.Context, name string) error {
	return s.writeTx(ctx, func(tx *Tx) error {
		return removeUser(ctx, tx, s.lock, name, Micros(s.now()))
	})
}
