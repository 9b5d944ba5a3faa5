package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/chainstudio/studio/store"
)

// Agents: a row per agent (its latest version) and a row per version with
// its source. Both backends run this SQL.

// SaveAgent stores a.Source as a new version of a.Name (see
// store.AgentStore).
func (s *Store) SaveAgent(ctx context.Context, a *store.Agent, baseVersion int) (*store.Agent, error) {
	if err := store.CheckAgent(a); err != nil {
		return nil, err
	}
	now := s.now()
	var out *store.Agent
	err := s.writeTx(ctx, func(tx *Tx) error {
		cur, err := getAgent(ctx, tx, a.Name)
		switch {
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return err
		case cur == nil && baseVersion != 0:
			return fmt.Errorf("%w: no agent named %q", store.ErrNotFound, a.Name)
		case cur != nil && baseVersion == 0:
			return fmt.Errorf("agent %q already exists: %w", a.Name, store.ErrNameTaken)
		case cur != nil && baseVersion != cur.Version:
			return fmt.Errorf("agent %q is at version %d, not %d (someone saved it since): %w", a.Name, cur.Version, baseVersion, store.ErrVersionConflict)
		case cur != nil && cur.Source == a.Source && cur.Description == a.Description:
			out = cur
			return nil
		}
		next := *a
		next.Version, next.UpdatedBy, next.Updated = 1, a.UpdatedBy, now
		if cur != nil {
			next.Version, next.CreatedBy, next.Created = cur.Version+1, cur.CreatedBy, cur.Created
		} else {
			if next.CreatedBy == "" {
				next.CreatedBy = a.UpdatedBy
			}
			next.Created = now
		}
		if cur == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO agents (name, version, description, created_by, created_at, updated_by, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				next.Name, next.Version, next.Description, next.CreatedBy, next.Created.UnixMicro(), next.UpdatedBy, next.Updated.UnixMicro())
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE agents SET version = ?, description = ?, updated_by = ?, updated_at = ? WHERE name = ?`,
				next.Version, next.Description, next.UpdatedBy, next.Updated.UnixMicro(), next.Name)
		}
		if err != nil {
			return fmt.Errorf("store: save agent %q: %w", a.Name, err)
		}
		if cur == nil {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM agents`).Scan(&n); err != nil {
				return fmt.Errorf("store: count agents: %w", err)
			}
			if n > store.MaxAgentsStored {
				return fmt.Errorf("%w: the store keeps at most %d agents; delete one first", store.ErrInvalid, store.MaxAgentsStored)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO agent_versions (name, version, source, message, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			next.Name, next.Version, next.Source, next.Message, next.UpdatedBy, next.Updated.UnixMicro()); err != nil {
			return fmt.Errorf("store: save agent %q version %d: %w", a.Name, next.Version, err)
		}
		out = &next
		return nil
	})
	if err != nil && s.d.IsUniqueViolation(err) { // a concurrent save got there first
		return nil, fmt.Errorf("agent %q was saved by someone else at the same moment: %w", a.Name, store.ErrVersionConflict)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// agentColumns read an agent at one of its versions (a: agents, v:
// agent_versions).
const agentColumns = `a.name, v.version, v.source, a.description, v.message, a.created_by, a.created_at, v.created_by, v.created_at`

func getAgent(ctx context.Context, q Queryer, name string) (*store.Agent, error) {
	out, err := agents(ctx, q, `SELECT `+agentColumns+` FROM agents a JOIN agent_versions v ON v.name = a.name AND v.version = a.version WHERE a.name = ?`, name)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no agent named %q", store.ErrNotFound, name)
	}
	return &out[0], nil
}

// GetAgent returns the agent's latest version.
func (s *Store) GetAgent(ctx context.Context, name string) (*store.Agent, error) {
	return getAgent(ctx, s.r, name)
}

// ListAgents lists every agent at its latest version, by name.
func (s *Store) ListAgents(ctx context.Context) ([]store.Agent, error) {
	return agents(ctx, s.r, `SELECT `+agentColumns+` FROM agents a JOIN agent_versions v ON v.name = a.name AND v.version = a.version ORDER BY a.name`)
}

// AgentVersions lists an agent's versions, newest first.
func (s *Store) AgentVersions(ctx context.Context, name string) ([]store.Agent, error) {
	out, err := agents(ctx, s.r, `SELECT `+agentColumns+` FROM agents a JOIN agent_versions v ON v.name = a.name WHERE a.name = ? ORDER BY v.version DESC`, name)
	if err == nil && len(out) == 0 {
		return nil, fmt.Errorf("%w: no agent named %q", store.ErrNotFound, name)
	}
	return out, err
}

// DeleteAgent deletes the agent and its versions.
func (s *Store) DeleteAgent(ctx context.Context, name string) error {
	return s.writeTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM agents WHERE name = ?`, name)
		if err != nil {
			return fmt.Errorf("store: delete agent %q: %w", name, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("%w: no agent named %q", store.ErrNotFound, name)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM agent_versions WHERE name = ?`, name); err != nil {
			return fmt.Errorf("store: delete agent %q: %w", name, err)
		}
		return nil
	})
}

func agents(ctx context.Context, q Queryer, query string, args ...any) ([]store.Agent, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read agents: %w", err)
	}
	defer rows.Close()
	out := []store.Agent{}
	for rows.Next() {
		var a store.Agent
		var created, updated int64
		if err := rows.Scan(&a.Name, &a.Version, &a.Source, &a.Description, &a.Message, &a.CreatedBy, &created, &a.UpdatedBy, &updated); err != nil {
			return nil, fmt.Errorf("store: read agents: %w", err)
		}
		a.Created, a.Updated = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: read agents: %w", err)
	}
	return out, nil
}
