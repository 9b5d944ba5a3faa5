package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/chainstudio/studio/store"
)

// Credentials: a row per credential, its secret fields sealed (JSON: field
// → sealed bytes, base64), and one key-check row. Both backends run this SQL.

const credentialColumns = `id, name, type, public_fields, sealed_fields, chains, hosts, budget, created_by, created_at, updated_by, updated_at, last_used_at`

func credentialArgs(c *store.SealedCredential) (public, sealed, chains, hosts string, err error) {
	pub := c.Public
	if pub == nil {
		pub = map[string]string{}
	}
	p, err := json.Marshal(pub)
	if err != nil {
		return "", "", "", "", fmt.Errorf("store: credential %q: %w", c.Name, err)
	}
	s, err := json.Marshal(c.Sealed) // []byte values encode as base64
	if err != nil {
		return "", "", "", "", fmt.Errorf("store: credential %q: %w", c.Name, err)
	}
	ch := c.Chains
	if ch == nil {
		ch = []string{}
	}
	b, err := json.Marshal(ch)
	if err != nil {
		return "", "", "", "", fmt.Errorf("store: credential %q: %w", c.Name, err)
	}
	hs := c.Hosts
	if hs == nil {
		hs = []string{}
	}
	h, err := json.Marshal(hs)
	if err != nil {
		return "", "", "", "", fmt.Errorf("store: credential %q: %w", c.Name, err)
	}
	return string(p), string(s), string(b), string(h), nil
}

// addCredential inserts a new credential; a name in use is ErrNameTaken.
func addCredential(ctx context.Context, tx Execer, c *store.SealedCredential) error {
	if err := store.CheckCredentialName(c.Name); err != nil {
		return err
	}
	if _, err := getCredential(ctx, tx, c.Name); err == nil {
		return fmt.Errorf("credential %q already exists: %w", c.Name, store.ErrNameTaken)
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	pub, sealed, chains, hosts, err := credentialArgs(c)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO credentials (`+credentialColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
		c.ID, c.Name, c.Type, pub, sealed, chains, hosts, encodeBudget(c.Budget), c.CreatedBy, c.Created.UnixMicro(), c.UpdatedBy, c.Updated.UnixMicro())
	if err != nil {
		return fmt.Errorf("store: add credential %q: %w", c.Name, err)
	}
	return nil
}

// updateCredential replaces the credential with c's id (its name stays).
func updateCredential(ctx context.Context, tx Execer, c *store.SealedCredential) error {
	pub, sealed, chains, hosts, err := credentialArgs(c)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE credentials SET type = ?, public_fields = ?, sealed_fields = ?, chains = ?, hosts = ?, budget = ?, updated_by = ?, updated_at = ? WHERE id = ?`,
		c.Type, pub, sealed, chains, hosts, encodeBudget(c.Budget), c.UpdatedBy, c.Updated.UnixMicro(), c.ID)
	if err != nil {
		return fmt.Errorf("store: update credential %q: %w", c.Name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: no credential named %q", store.ErrNotFound, c.Name)
	}
	return nil
}

// getCredential reads the credential named name, sealed values included.
func getCredential(ctx context.Context, q Queryer, name string) (*store.SealedCredential, error) {
	cs, err := credentials(ctx, q, true, `SELECT `+credentialColumns+` FROM credentials WHERE name = ?`, name)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("%w: no credential named %q", store.ErrNotFound, name)
	}
	return &cs[0], nil
}

// listCredentials lists every credential by name, without sealed values.
func listCredentials(ctx context.Context, q Queryer) ([]store.Credential, error) {
	cs, err := credentials(ctx, q, false, `SELECT `+credentialColumns+` FROM credentials ORDER BY name`)
	if err != nil {
		return nil, err
	}
	out := make([]store.Credential, len(cs))
	for i := range cs {
		out[i] = cs[i].Credential
	}
	return out, nil
}

func credentials(ctx context.Context, q Queryer, withSealed bool, query string, args ...any) ([]store.SealedCredential, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read credentials: %w", err)
	}
	defer rows.Close()
	var out []store.SealedCredential
	for rows.Next() {
		var c store.SealedCredential
		var pub, sealed, chains, hosts, budget string
		var created, updated int64
		var used sql.NullInt64
		if err := rows.Scan(&c.ID, &c.Name, &c.Type, &pub, &sealed, &chains, &hosts, &budget, &c.CreatedBy, &created, &c.UpdatedBy, &updated, &used); err != nil {
			return nil, fmt.Errorf("store: read credentials: %w", err)
		}
		c.Created = time.UnixMicro(created).UTC()
		c.Updated = time.UnixMicro(updated).UTC()
		if used.Valid {
			c.LastUsed = time.UnixMicro(used.Int64).UTC()
		}
		err := decodeCredential(&c, pub, sealed, chains, hosts, withSealed)
		if err == nil {
			c.Budget, err = decodeBudget(budget)
		}
		if err != nil {
			if withSealed { // a get, or a reseal: the record cannot be used
				return nil, fmt.Errorf("store: credential %q cannot be read: %w", c.Name, err)
			}
			// A list shows the record as unreadable rather than failing
			// for every other one.
			c.Unreadable = err.Error()
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read credentials: %w", err)
	}
	return out, nil
}

// decodeCredential decodes a row's JSON columns into c.
func decodeCredential(c *store.SealedCredential, pub, sealed, chains, hosts string, withSealed bool) error {
	if err := json.Unmarshal([]byte(pub), &c.Public); err != nil {
		return fmt.Errorf("public fields: %w", err)
	}
	var s map[string][]byte
	if err := json.Unmarshal([]byte(sealed), &s); err != nil {
		return fmt.Errorf("sealed fields: %w", err)
	}
	for k := range s {
		c.Set = append(c.Set, k)
	}
	sort.Strings(c.Set)
	if withSealed {
		c.Sealed = s
	}
	if err := json.Unmarshal([]byte(chains), &c.Chains); err != nil {
		return fmt.Errorf("chains: %w", err)
	}
	if err := json.Unmarshal([]byte(hosts), &c.Hosts); err != nil {
		return fmt.Errorf("hosts: %w", err)
	}
	return nil
}

// credentialBudget reads the budget of the credential named name alone
// (zero when none).
func credentialBudget(ctx context.Context, q Conn, name string) (store.DayBudget, error) {
	var budget string
	err := q.QueryRowContext(ctx, `SELECT budget FROM credentials WHERE name = ?`, name).Scan(&budget)
	if errors.Is(err, sql.ErrNoRows) {
		return store.DayBudget{}, nil
	}
	if err != nil {
		return store.DayBudget{}, fmt.Errorf("store: credential %q's budget: %w", name, err)
	}
	b, err := decodeBudget(budget)
	if err != nil {
		return b, fmt.Errorf("store: credential %q's budget: %w", name, err)
	}
	return b, nil
}

// removeCredential deletes the credential named name.
func removeCredential(ctx context.Context, tx Execer, name string) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM credentials WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("store: remove credential %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: no credential named %q", store.ErrNotFound, name)
	}
	return nil
}

// touchCredential records a use; a removed credential is no error (the run
// resolved it before it went).
func touchCredential(ctx context.Context, w Writer, id string, at time.Time) error {
	if _, err := w.ExecContext(ctx, `UPDATE credentials SET last_used_at = ? WHERE id = ?`, at.UnixMicro(), id); err != nil {
		return fmt.Errorf("store: record a use of credential %s: %w", id, err)
	}
	return nil
}

// credentialKeyCheck reads the key check, nil when none is stored.
func credentialKeyCheck(ctx context.Context, q Queryer) ([]byte, error) {
	rows, err := q.QueryContext(ctx, `SELECT sealed FROM credential_key WHERE id = 1`)
	if err != nil {
		return nil, fmt.Errorf("store: read the credentials key check: %w", err)
	}
	defer rows.Close()
	var check []byte
	if rows.Next() {
		if err := rows.Scan(&check); err != nil {
			return nil, fmt.Errorf("store: read the credentials key check: %w", err)
		}
	}
	return check, rows.Err()
}

// setCredentialKeyCheck stores the key check once.
func setCredentialKeyCheck(ctx context.Context, tx Execer, check []byte) error {
	old, err := credentialKeyCheck(ctx, tx)
	if err != nil {
		return err
	}
	if old != nil {
		return store.Errorf(store.ECONFLICT, "the credentials key check is set already (a rotation replaces it)")
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO credential_key (id, sealed) VALUES (1, ?)`, check); err != nil {
		return fmt.Errorf("store: store the credentials key check: %w", err)
	}
	return nil
}

// resealCredentials replaces every sealed value and the key check, inside
// the caller's transaction.
func resealCredentials(ctx context.Context, tx Execer, reseal func(id, field string, sealed []byte) ([]byte, error), check []byte) error {
	cs, err := credentials(ctx, tx, true, `SELECT `+credentialColumns+` FROM credentials ORDER BY name`)
	if err != nil {
		return err
	}
	for i := range cs {
		c := &cs[i]
		next := make(map[string][]byte, len(c.Sealed))
		for field, v := range c.Sealed {
			nv, err := reseal(c.ID, field, v)
			if err != nil {
				return fmt.Errorf("credential %q, field %q: %w", c.Name, field, err)
			}
			next[field] = nv
		}
		b, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("store: credential %q: %w", c.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE credentials SET sealed_fields = ? WHERE id = ?`, string(b), c.ID); err != nil {
			return fmt.Errorf("store: reseal credential %q: %w", c.Name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM credential_key WHERE id = 1`); err != nil {
		return fmt.Errorf("store: replace the credentials key check: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO credential_key (id, sealed) VALUES (1, ?)`, check); err != nil {
		return fmt.Errorf("store: replace the credentials key check: %w", err)
	}
	return nil
}

// AddCredential stores a new credential; a name in use is ErrNameTaken.
func (s *Store) AddCredential(ctx context.Context, c *store.SealedCredential) error {
	err := s.writeTx(ctx, func(tx *Tx) error { return addCredential(ctx, tx, c) })
	if s.d.IsUniqueViolation(err) { // a concurrent add of the same name
		return fmt.Errorf("credential %q already exists: %w", c.Name, store.ErrNameTaken)
	}
	return err
}

// UpdateCredential replaces the credential with c's id.
func (s *Store) UpdateCredential(ctx context.Context, c *store.SealedCredential) error {
	return s.writeTx(ctx, func(tx *Tx) error { return updateCredential(ctx, tx, c) })
}

// GetCredential returns the credential named name.
func (s *Store) GetCredential(ctx context.Context, name string) (*store.SealedCredential, error) {
	return getCredential(ctx, s.r, name)
}

// CredentialBudget returns the budget of the credential named name.
func (s *Store) CredentialBudget(ctx context.Context, name string) (store.DayBudget, error) {
	return credentialBudget(ctx, s.r, name)
}

// ListCredentials lists the credentials by name.
func (s *Store) ListCredentials(ctx context.Context) ([]store.Credential, error) {
	return listCredentials(ctx, s.r)
}

// RemoveCredential deletes the credential named name.
func (s *Store) RemoveCredential(ctx context.Context, name string) error {
	return s.writeTx(ctx, func(tx *Tx) error { return removeCredential(ctx, tx, name) })
}

// TouchCredential records that a run used a credential.
func (s *Store) TouchCredential(ctx context.Context, id string, at time.Time) error {
	return s.writeTx(ctx, func(tx *Tx) error { return touchCredential(ctx, tx, id, at) })
}

// CredentialKeyCheck returns the key check, nil before the first credential.
func (s *Store) CredentialKeyCheck(ctx context.Context) ([]byte, error) {
	return credentialKeyCheck(ctx, s.r)
}

// SetCredentialKeyCheck stores the key check once.
func (s *Store) SetCredentialKeyCheck(ctx context.Context, check []byte) error {
	return s.writeTx(ctx, func(tx *Tx) error { return setCredentialKeyCheck(ctx, tx, check) })
}

// ResealCredentials re-encrypts every credential in one transaction.
func (s *Store) ResealCredentials(ctx context.Context, reseal func(id, field string, sealed []byte) ([]byte, error), check []byte) error {
	return s.writeTx(ctx, func(tx *Tx) error { return resealCredentials(ctx, tx, reseal, check) })
}
