package sqlq

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

// AddUser inserts a live user after checking its name, role and hash; a
// live user of that name is ErrNameTaken. now is unix microseconds.
func AddUser(ctx context.Context, tx Execer, name, role string, tokenHash []byte, now int64) (*store.User, error) {
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

// UserByTokenHash finds the live user whose token has this SHA-256.
func UserByTokenHash(ctx context.Context, q Queryer, tokenHash []byte) (*store.User, error) {
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

// GetUser finds the live user named name.
func GetUser(ctx context.Context, q Queryer, name string) (*store.User, error) {
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

// ListUsers lists the live users by name.
func ListUsers(ctx context.Context, q Queryer) ([]store.User, error) {
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

// SetUserRole changes a live user's role.
func SetUserRole(ctx context.Context, tx Execer, name, role string) (*store.User, error) {
	if err := store.CheckRole(role); err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE users SET role = ? WHERE name = ? AND removed_at IS NULL`, role, name)
	if err != nil {
		return nil, fmt.Errorf("store: set the role of user %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return nil, fmt.Errorf("%w: no user named %q", store.ErrNotFound, name)
	}
	return GetUser(ctx, tx, name)
}

// RemoveUser marks a live user removed (now: unix microseconds).
func RemoveUser(ctx context.Context, tx Execer, name string, now int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE users SET removed_at = ? WHERE name = ? AND removed_at IS NULL`, now, name)
	if err != nil {
		return fmt.Errorf("store: remove user %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: no user named %q", store.ErrNotFound, name)
	}
	return nil
}
