package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/chainstudio/studio/store"
)

// Conversations: one row a turn (conversation_turns). Both backends run
// this SQL; ON CONFLICT DO NOTHING on (scope, session, append_key, item)
// is what makes an append idempotent.

// AppendTurns adds turns to a session once per key and deletes the oldest
// past store.MaxConversationTurns.
func (s *Store) AppendTurns(ctx context.Context, scope, session, key string, turns []store.ConversationTurn) error {
	if err := store.CheckConversation(scope, session); err != nil {
		return err
	}
	if key == "" || len(key) > store.MaxConversationName {
		return fmt.Errorf("%w: conversation append key: want 1 to %d bytes, got %d", store.ErrInvalid, store.MaxConversationName, len(key))
	}
	if len(turns) == 0 {
		return nil
	}
	return s.writeTx(ctx, func(tx *Tx) error {
		for i, t := range turns {
			at := t.At
			if at.IsZero() {
				at = s.now()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO conversation_turns (scope, session, append_key, item, role, text, at) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (scope, session, append_key, item) DO NOTHING`,
				scope, session, key, i, t.Role, store.ClipConversationText(t.Text), at.UnixMicro()); err != nil {
				return fmt.Errorf("store: append to conversation %q of %q: %w", session, scope, err)
			}
		}
		// Keep the newest: the id of the oldest kept row bounds the rest
		// (no row at that offset: fewer than the bound, nothing deleted).
		if _, err := tx.ExecContext(ctx, `DELETE FROM conversation_turns WHERE scope = ? AND session = ? AND id <
(SELECT id FROM conversation_turns WHERE scope = ? AND session = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
			scope, session, scope, session, store.MaxConversationTurns-1); err != nil {
			return fmt.Errorf("store: trim conversation %q of %q: %w", session, scope, err)
		}
		return nil
	})
}

// LoadTurns returns a session's newest limit turns, oldest first, and how
// many it keeps.
func (s *Store) LoadTurns(ctx context.Context, scope, session string, limit int) ([]store.ConversationTurn, int, error) {
	if limit <= 0 || limit > store.MaxConversationTurns {
		limit = store.MaxConversationTurns
	}
	var out []store.ConversationTurn
	total := 0
	err := s.readTx(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM conversation_turns WHERE scope = ? AND session = ?`, scope, session).Scan(&total); err != nil {
			return fmt.Errorf("store: count conversation %q of %q: %w", session, scope, err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, role, text, at FROM conversation_turns WHERE scope = ? AND session = ? ORDER BY id DESC LIMIT ?`,
			scope, session, limit)
		if err != nil {
			return fmt.Errorf("store: read conversation %q of %q: %w", session, scope, err)
		}
		defer rows.Close()
		out = make([]store.ConversationTurn, 0, min(limit, total))
		for rows.Next() {
			var t store.ConversationTurn
			var at int64
			if err := rows.Scan(&t.ID, &t.Role, &t.Text, &at); err != nil {
				return fmt.Errorf("store: read conversation %q of %q: %w", session, scope, err)
			}
			t.At = time.UnixMicro(at).UTC()
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, total, nil
}

// ListConversations lists sessions, the most recently added to first.
func (s *Store) ListConversations(ctx context.Context, f store.ConversationFilter) ([]store.ConversationSession, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = store.DefaultConversationList
	}
	limit = min(limit, store.MaxConversationList)
	q := `SELECT scope, session, COUNT(*), MAX(at) FROM conversation_turns`
	var args []any
	if f.Scope != "" {
		q += ` WHERE scope = ?`
		args = append(args, f.Scope)
	}
	q += ` GROUP BY scope, session ORDER BY MAX(at) DESC, scope, session LIMIT ?`
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list conversations: %w", err)
	}
	defer rows.Close()
	out := []store.ConversationSession{}
	for rows.Next() {
		var c store.ConversationSession
		var last int64
		if err := rows.Scan(&c.Scope, &c.Session, &c.Turns, &last); err != nil {
			return nil, fmt.Errorf("store: list conversations: %w", err)
		}
		c.LastAt = time.UnixMicro(last).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list conversations: %w", err)
	}
	return out, nil
}

// ClearConversation deletes a session's turns.
func (s *Store) ClearConversation(ctx context.Context, scope, session string) (int, error) {
	n := 0
	err := s.writeTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM conversation_turns WHERE scope = ? AND session = ?`, scope, session)
		if err != nil {
			return fmt.Errorf("store: clear conversation %q of %q: %w", session, scope, err)
		}
		d, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("store: clear conversation %q of %q: %w", session, scope, err)
		}
		if d == 0 {
			return fmt.Errorf("%w: no conversation %q in %q", store.ErrNotFound, session, scope)
		}
		n = int(d)
		return nil
	})
	return n, err
}

// PruneConversations deletes the turns kept before before, in batches so
// that no transaction holds the database long.
func (s *Store) PruneConversations(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		var n int64
		err := s.writeTx(ctx, func(tx *Tx) error {
			res, err := tx.ExecContext(ctx, `DELETE FROM conversation_turns WHERE id IN (SELECT id FROM conversation_turns WHERE at < ? ORDER BY id LIMIT ?)`, before.UnixMicro(), pruneBatch)
			if err != nil {
				return fmt.Errorf("store: prune conversations: %w", err)
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < pruneBatch {
			return total, nil
		}
	}
}
