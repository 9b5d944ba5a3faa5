package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/doccache"
	"github.com/google/uuid"
)

func encodeDoc(doc *chain.Chain) (string, error) {
	if doc == nil {
		return "", fmt.Errorf("%w: no chain document", store.ErrInvalid)
	}
	if strings.TrimSpace(doc.Name) == "" {
		return "", fmt.Errorf("%w: the chain has no name", store.ErrInvalid)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("%w: chain document is not JSON: %v", store.ErrInvalid, err)
	}
	return string(b), nil
}

// decodeDoc decodes a stored document. nodes is the version's node count:
// encoding/json appends into a slice's spare capacity, so sizing Nodes and
// Edges up front saves the repeated grow-and-copy of ~400-byte Node structs
// (a fifth of the decode time of a 2,000-node chain).
func decodeDoc(s string, nodes int) (*chain.Chain, error) {
	var c chain.Chain
	if nodes > 0 && nodes <= chain.DefaultLimits.MaxNodes {
		c.Nodes = make([]chain.Node, 0, nodes)
		c.Edges = make([]chain.Edge, 0, nodes+nodes/4)
	}
	// encoding/json/v2 (its prototype module until Go ships it by default)
	// decodes a large document in about two thirds of v1's time. The bytes
	// were written by encodeDoc, so v2's stricter defaults (exact field names,
	// no duplicate names, valid UTF-8) always hold.
	if err := jsonv2.Unmarshal([]byte(s), &c); err != nil {
		return nil, fmt.Errorf("stored chain document is corrupt: %w", err)
	}
	return &c, nil
}

// nameHolder returns the id of the live chain named name, other than except.
func nameHolder(ctx context.Context, tx *Tx, name, except string) (string, error) {
	var id string
	err := tx.QueryRowContext(ctx, `SELECT id FROM chains WHERE name = ? AND deleted_at IS NULL AND id <> ?`, name, except).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// CreateChain stores doc as version 1 of a new chain named doc.Name,
// published when publish is set.
func (s *Store) CreateChain(ctx context.Context, doc *chain.Chain, message string, publish bool) (*store.Chain, error) {
	body, err := encodeDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("store: create chain: %w", err)
	}
	now := s.now().UTC()
	ch := &store.Chain{
		ID: uuid.NewString(), Name: doc.Name, Description: doc.Description, Version: 1,
		NodeCount: len(doc.Nodes), Created: FromMicros(Micros(now)), Updated: FromMicros(Micros(now)),
	}
	// A chain created from a valid document (the API, an import, a
	// template) is published as created, so it runs by name at once; a blank
	// or invalid one starts unpublished, so that no trigger runs it before a
	// deliberate Publish.
	pubVersion, pubAt, pubMessage := 0, any(nil), ""
	if publish {
		ch.Published = store.Publication{Version: 1, At: FromMicros(Micros(now)), Message: message}
		pubVersion, pubAt, pubMessage = 1, Micros(now), message
	}
	err = s.writeTx(ctx, func(tx *Tx) error {
		holder, err := nameHolder(ctx, tx, doc.Name, "")
		if err != nil {
			return err
		}
		if holder != "" {
			return &store.ConflictError{Name: doc.Name, ChainID: holder}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO chains (id, name, description, current_version, node_count, created_at, updated_at,
  published_version, published_at, published_message)
VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?)`, ch.ID, ch.Name, ch.Description, ch.NodeCount, Micros(now), Micros(now), pubVersion, pubAt, pubMessage); err != nil {
			if s.d.IsUniqueViolation(err) {
				return &store.ConflictError{Name: doc.Name}
			}
			return err
		}
		return insertVersion(ctx, tx, ch.ID, 1, doc, body, message, store.VersionSave, now)
	})
	if err != nil {
		return nil, fmt.Errorf("store: create chain %q: %w", doc.Name, err)
	}
	ch.Doc = doccache.Clone(doc)
	return ch, nil
}

func insertVersion(ctx context.Context, tx *Tx, id string, v int, doc *chain.Chain, body, message string, kind store.VersionKind, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO chain_versions (chain_id, version, name, node_count, message, kind, doc, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, v, doc.Name, len(doc.Nodes), message, string(kind), body, Micros(now))
	return err
}

// SaveChain stores doc as a new version of chain id. baseVersion is the
// version the edit started from: when the chain has moved on since, nothing is
// written and a *VersionConflictError carries the current version.
func (s *Store) SaveChain(ctx context.Context, id string, baseVersion int, doc *chain.Chain, message string) (*store.Chain, error) {
	return s.SaveChainAs(ctx, id, baseVersion, doc, message, store.VersionSave)
}

// SaveChainAs is SaveChain recording how the version was made (the designer's
// autosave says VersionAutosave).
func (s *Store) SaveChainAs(ctx context.Context, id string, baseVersion int, doc *chain.Chain, message string, kind store.VersionKind) (*store.Chain, error) {
	body, err := encodeDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("store: save chain %s: %w", id, err)
	}
	now := s.now().UTC()
	var ch *store.Chain
	err = s.writeTx(ctx, func(tx *Tx) error {
		var err error
		ch, err = s.saveVersion(ctx, tx, id, &baseVersion, doc, body, message, kind, now, true)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: save chain %s: %w", id, err)
	}
	ch.Doc = doccache.Clone(doc)
	// The next read is the editor's next save or a run of this version:
	// keep it decoded (a 5,000-node document takes ~20 ms to decode). A
	// version never changes once written, so the entry holds in every
	// process sharing the database.
	s.docs.Put(id, ch.Version, doc)
	return ch, nil
}

// saveVersion appends a version to a live chain. base == nil skips the
// optimistic-concurrency check. keepSame: a document whose stored form is
// the current version's (a save that changes nothing) writes nothing and
// returns the chain at its current version, so that its ETag stays.
func (s *Store) saveVersion(ctx context.Context, tx *Tx, id string, base *int, doc *chain.Chain, body, message string, kind store.VersionKind, now time.Time, keepSame bool) (*store.Chain, error) {
	var cur int
	var created, exposed int64
	var pub store.Publication
	var pubAt sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT current_version, created_at, mcp_exposed, published_version, published_at, published_by, published_message
FROM chains WHERE id = ? AND deleted_at IS NULL`+s.d.ForUpdate(), id).Scan(&cur, &created, &exposed, &pub.Version, &pubAt, &pub.By, &pub.Message)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	pub.At = FromNullMicros(pubAt)
	if base != nil && *base != cur {
		return nil, &store.VersionConflictError{ChainID: id, Base: *base, Current: cur}
	}
	if keepSame {
		var same bool
		var updated int64
		// Compared in the database: a large document is not read back.
		err := tx.QueryRowContext(ctx, `SELECT v.doc = ?, c.updated_at FROM chain_versions v JOIN chains c ON c.id = v.chain_id
WHERE v.chain_id = ? AND v.version = ?`, body, id, cur).Scan(&same, &updated)
		if err != nil {
			return nil, err
		}
		if same {
			return &store.Chain{
				ID: id, Name: doc.Name, Description: doc.Description, Version: cur, NodeCount: len(doc.Nodes),
				Created: FromMicros(created), Updated: FromMicros(updated), Published: pub, MCPExposed: exposed == 1,
			}, nil
		}
	}
	holder, err := nameHolder(ctx, tx, doc.Name, id)
	if err != nil {
		return nil, err
	}
	if holder != "" {
		return nil, &store.ConflictError{Name: doc.Name, ChainID: holder}
	}
	next := cur + 1
	if err := insertVersion(ctx, tx, id, next, doc, body, message, kind, now); err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE chains SET name = ?, description = ?, current_version = ?, node_count = ?, updated_at = ?
WHERE id = ? AND current_version = ?`, doc.Name, doc.Description, next, len(doc.Nodes), Micros(now), id, cur)
	if err != nil {
		if s.d.IsUniqueViolation(err) {
			return nil, &store.ConflictError{Name: doc.Name}
		}
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, err
	} else if n != 1 {
		return nil, &store.VersionConflictError{ChainID: id, Base: cur, Current: -1}
	}
	return &store.Chain{
		ID: id, Name: doc.Name, Description: doc.Description, Version: next, NodeCount: len(doc.Nodes),
		Created: FromMicros(created), Updated: FromMicros(Micros(now)), Published: pub, MCPExposed: exposed == 1,
	}, nil
}

const chainCols = `id, name, description, current_version, node_count, created_at, updated_at, mcp_exposed,
  published_version, published_at, published_by, published_message`

// loadDoc returns version v of chain id's document, from the cache of
// decoded documents when it is there.
func (s *Store) loadDoc(ctx context.Context, q rowQueryer, id string, v int) (*chain.Chain, error) {
	if d := s.docs.Get(id, v); d != nil {
		return d, nil
	}
	var body string
	var nodes int
	err := q.QueryRowContext(ctx, `SELECT doc, node_count FROM chain_versions WHERE chain_id = ? AND version = ?`, id, v).Scan(&body, &nodes)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	d, err := decodeDoc(body, nodes)
	if err != nil {
		return nil, err
	}
	s.docs.Put(id, v, d)
	return d, nil
}

// getChain reads a live chain's row (where is "id = ?" or "name = ?") and
// its current document, or with published its published version's (Version,
// NodeCount and Doc are then the published version's).
func (s *Store) getChain(ctx context.Context, where string, arg any, published bool) (*store.Chain, error) {
	var ch store.Chain
	err := s.readTx(ctx, func(tx *Tx) error {
		var created, updated, exposed int64
		var pubAt sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT `+chainCols+` FROM chains WHERE `+where+` AND deleted_at IS NULL`, arg).
			Scan(&ch.ID, &ch.Name, &ch.Description, &ch.Version, &ch.NodeCount, &created, &updated, &exposed,
				&ch.Published.Version, &pubAt, &ch.Published.By, &ch.Published.Message)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		ch.Created, ch.Updated, ch.Published.At, ch.MCPExposed = FromMicros(created), FromMicros(updated), FromNullMicros(pubAt), exposed == 1
		if published {
			if ch.Published.Version == 0 {
				return &store.NotPublishedError{ChainID: ch.ID, Name: ch.Name}
			}
			ch.Version = ch.Published.Version
		}
		ch.Doc, err = s.loadDoc(ctx, tx, ch.ID, ch.Version)
		if err == nil && published {
			ch.NodeCount = len(ch.Doc.Nodes)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &ch, nil
}

// GetChain returns a live chain at its current version.
func (s *Store) GetChain(ctx context.Context, id string) (*store.Chain, error) {
	ch, err := s.getChain(ctx, "id = ?", id, false)
	if err != nil {
		return nil, fmt.Errorf("store: get chain %s: %w", id, err)
	}
	return ch, nil
}

// GetPublishedChain returns a live chain at its published version.
func (s *Store) GetPublishedChain(ctx context.Context, id string) (*store.Chain, error) {
	ch, err := s.getChain(ctx, "id = ?", id, true)
	if err != nil {
		return nil, fmt.Errorf("store: get chain %s: %w", id, err)
	}
	return ch, nil
}

// PublishChain makes version v (0: the current one) the published version.
func (s *Store) PublishChain(ctx context.Context, id string, v, baseVersion int, by, message string) (*store.Chain, error) {
	message = strings.TrimSpace(message)
	if len(message) > store.MaxVersionMessage {
		return nil, fmt.Errorf("store: publish chain %s: %w: the message is %d bytes, at most %d", id, store.ErrInvalid, len(message), store.MaxVersionMessage)
	}
	now := s.now().UTC()
	err := s.writeTx(ctx, func(tx *Tx) error {
		cur, err := s.lockCurrent(ctx, tx, id, baseVersion)
		if err != nil {
			return err
		}
		if v == 0 {
			v = cur
		}
		if v < 1 || v > cur {
			return fmt.Errorf("%w: version %d does not exist (the chain has versions 1 to %d)", store.ErrNotFound, v, cur)
		}
		_, err = tx.ExecContext(ctx, `UPDATE chains SET published_version = ?, published_at = ?, published_by = ?, published_message = ?
WHERE id = ?`, v, Micros(now), by, message, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: publish chain %s: %w", id, err)
	}
	return s.GetChain(ctx, id)
}

// GetChainByName returns the live chain with the given name.
func (s *Store) GetChainByName(ctx context.Context, name string) (*store.Chain, error) {
	ch, err := s.getChain(ctx, "name = ?", name, false)
	if err != nil {
		return nil, fmt.Errorf("store: get chain %q: %w", name, err)
	}
	return ch, nil
}

// ResolveChain returns the published document of the live chain named name;
// it is the lookup the engine uses for sub-chains (skill nodes), so a chain
// being edited is called as it was published, never half-edited.
func (s *Store) ResolveChain(ctx context.Context, name string) (*chain.Chain, error) {
	ch, err := s.getChain(ctx, "name = ?", name, true)
	if err != nil {
		return nil, fmt.Errorf("store: get chain %q: %w", name, err)
	}
	return ch.Doc, nil
}

// ListChains lists live chains by name, with the status of each one's latest
// run, and the total number of chains matching the filter (f.After aside).
func (s *Store) ListChains(ctx context.Context, f store.ChainFilter) ([]store.ChainSummary, int, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	if f.Limit > 1000 {
		f.Limit = 1000
	}
	if f.Offset < 0 {
		f.Offset = 0
	}
	where := `c.deleted_at IS NULL`
	var args []any
	if f.Query != "" {
		where += ` AND LOWER(c.name) LIKE ? ESCAPE '\'`
		args = append(args, likePattern(f.Query))
	}
	if f.Name != "" {
		where += ` AND c.name = ?`
		args = append(args, f.Name)
	}
	var out []store.ChainSummary
	var total int
	countWhere, countArgs := where, args
	if f.After != nil {
		where += ` AND (LOWER(c.name) > LOWER(?) OR LOWER(c.name) = LOWER(?) AND c.id > ?)`
		args = append(args, f.After.Name, f.After.Name, f.After.ID)
	}
	err := s.readTx(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM chains c WHERE `+countWhere, countArgs...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT c.id, c.name, c.description, c.current_version, c.node_count, c.published_version, c.created_at, c.updated_at,
  (SELECT r.status FROM runs r WHERE r.chain_id = c.id ORDER BY r.started_at DESC, r.id LIMIT 1),
  (SELECT r.started_at FROM runs r WHERE r.chain_id = c.id ORDER BY r.started_at DESC, r.id LIMIT 1)
FROM chains c WHERE `+where+`
ORDER BY LOWER(c.name), c.id
LIMIT ? OFFSET ?`, append(args, f.Limit, f.Offset)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s store.ChainSummary
			var created, updated int64
			var status sql.NullString
			var lastAt sql.NullInt64
			if err := rows.Scan(&s.ID, &s.Name, &s.Description, &s.Version, &s.NodeCount, &s.Published, &created, &updated, &status, &lastAt); err != nil {
				return err
			}
			s.Created, s.Updated = FromMicros(created), FromMicros(updated)
			s.LastRunStatus = chain.RunStatus(status.String)
			s.LastRunAt = FromNullMicros(lastAt)
			out = append(out, s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: list chains: %w", err)
	}
	return out, total, nil
}

// lockCurrent reads a live chain's current version, locking its row for the
// transaction, and checks it against base (0: any version): a
// *VersionConflictError when the chain has moved on.
func (s *Store) lockCurrent(ctx context.Context, tx *Tx, id string, base int) (int, error) {
	var cur int
	err := tx.QueryRowContext(ctx, `SELECT current_version FROM chains WHERE id = ? AND deleted_at IS NULL`+s.d.ForUpdate(), id).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	if base != 0 && base != cur {
		return 0, &store.VersionConflictError{ChainID: id, Base: base, Current: cur}
	}
	return cur, nil
}

// DeleteChain soft-deletes a chain: it disappears from lists and lookups and
// its name becomes free; its versions and runs are kept. baseVersion, when
// not 0, must still be the current version (else a *VersionConflictError and
// nothing changes).
func (s *Store) DeleteChain(ctx context.Context, id string, baseVersion int) error {
	err := s.writeTx(ctx, func(tx *Tx) error {
		if baseVersion != 0 {
			if _, err := s.lockCurrent(ctx, tx, id, baseVersion); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE chains SET deleted_at = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL`,
			Micros(s.now()), Micros(s.now()), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete chain %s: %w", id, err)
	}
	return nil
}

// SetChainMCP marks a live chain as offered (or not) as an MCP tool. It
// makes no version and leaves updated_at alone: it is not an edit.
func (s *Store) SetChainMCP(ctx context.Context, id string, exposed bool) error {
	err := s.writeTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE chains SET mcp_exposed = ? WHERE id = ? AND deleted_at IS NULL`, boolInt(exposed), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: set chain %s mcp exposure: %w", id, err)
	}
	return nil
}

// ListMCPChains returns the live chains offered as MCP tools at their
// published versions (Version, NodeCount and Doc are the published one's),
// by name then id; at most limit, more saying whether
// others were left out.
func (s *Store) ListMCPChains(ctx context.Context, limit int) ([]store.Chain, bool, error) {
	if limit <= 0 {
		limit = 100
	}
	var out []store.Chain
	more := false
	err := s.readTx(ctx, func(tx *Tx) error {
		out, more = out[:0], false
		rows, err := tx.QueryContext(ctx, `SELECT `+chainCols+` FROM chains WHERE mcp_exposed = 1 AND published_version > 0 AND deleted_at IS NULL ORDER BY name, id LIMIT ?`, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ch store.Chain
			var created, updated, exposed int64
			var pubAt sql.NullInt64
			if err := rows.Scan(&ch.ID, &ch.Name, &ch.Description, &ch.Version, &ch.NodeCount, &created, &updated, &exposed,
				&ch.Published.Version, &pubAt, &ch.Published.By, &ch.Published.Message); err != nil {
				return err
			}
			ch.Created, ch.Updated, ch.MCPExposed, ch.Published.At = FromMicros(created), FromMicros(updated), exposed == 1, FromNullMicros(pubAt)
			if ch.Published.Version == 0 {
				continue // nothing of it may run by name
			}
			// A tool is the published version: its description and schema
			// are what a call runs.
			ch.Version = ch.Published.Version
			out = append(out, ch)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		if len(out) > limit {
			out, more = out[:limit], true
		}
		for i := range out {
			if out[i].Doc, err = s.loadDoc(ctx, tx, out[i].ID, out[i].Version); err != nil {
				return err
			}
			out[i].NodeCount = len(out[i].Doc.Nodes)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: list mcp chains: %w", err)
	}
	return out, more, nil
}

// ListVersions lists a chain's versions, newest first (documents omitted).
// It works for deleted chains too, so that old runs can show their chain.
func (s *Store) ListVersions(ctx context.Context, id string) ([]store.ChainVersion, error) {
	var out []store.ChainVersion
	err := s.readTx(ctx, func(tx *Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM chains WHERE id = ?`, id).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT version, name, node_count, message, kind, created_at FROM chain_versions
WHERE chain_id = ? ORDER BY version DESC`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			v := store.ChainVersion{ChainID: id}
			var created int64
			if err := rows.Scan(&v.Version, &v.Name, &v.NodeCount, &v.Message, &v.Kind, &created); err != nil {
				return err
			}
			v.Created = FromMicros(created)
			out = append(out, v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: list versions of chain %s: %w", id, err)
	}
	return out, nil
}

func getVersionMeta(ctx context.Context, q rowQueryer, id string, v int) (*store.ChainVersion, error) {
	cv := store.ChainVersion{ChainID: id, Version: v}
	var created int64
	err := q.QueryRowContext(ctx, `SELECT name, node_count, message, kind, created_at FROM chain_versions WHERE chain_id = ? AND version = ?`, id, v).
		Scan(&cv.Name, &cv.NodeCount, &cv.Message, &cv.Kind, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	cv.Created = FromMicros(created)
	return &cv, nil
}

func getVersion(ctx context.Context, q rowQueryer, id string, v int) (*store.ChainVersion, string, error) {
	cv := store.ChainVersion{ChainID: id, Version: v}
	var created int64
	var doc string
	err := q.QueryRowContext(ctx, `SELECT name, node_count, message, kind, created_at, doc FROM chain_versions WHERE chain_id = ? AND version = ?`, id, v).
		Scan(&cv.Name, &cv.NodeCount, &cv.Message, &cv.Kind, &created, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", store.ErrNotFound
	}
	if err != nil {
		return nil, "", err
	}
	cv.Created = FromMicros(created)
	return &cv, doc, nil
}

// GetVersion returns one version of a chain with its document.
func (s *Store) GetVersion(ctx context.Context, id string, v int) (*store.ChainVersion, error) {
	var cv *store.ChainVersion
	err := s.readTx(ctx, func(tx *Tx) error {
		var err error
		if cv, err = getVersionMeta(ctx, tx, id, v); err != nil {
			return err
		}
		cv.Doc, err = s.loadDoc(ctx, tx, id, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: get version %d of chain %s: %w", v, id, err)
	}
	return cv, nil
}

// RestoreVersion saves the content of version v as a new version (history is
// never rewritten). An empty message becomes "restored version v".
// baseVersion, when not 0, must still be the current version (else a
// *VersionConflictError and nothing is written).
func (s *Store) RestoreVersion(ctx context.Context, id string, v, baseVersion int, message string) (*store.Chain, error) {
	if message == "" {
		message = fmt.Sprintf("restored version %d", v)
	}
	now := s.now().UTC()
	var ch *store.Chain
	var doc *chain.Chain
	err := s.writeTx(ctx, func(tx *Tx) error {
		_, b, err := getVersion(ctx, tx, id, v)
		if err != nil {
			return err
		}
		if doc, err = s.loadDoc(ctx, tx, id, v); err != nil {
			return err
		}
		var base *int
		if baseVersion != 0 {
			base = &baseVersion
		}
		ch, err = s.saveVersion(ctx, tx, id, base, doc, b, message, store.VersionSave, now, false)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: restore version %d of chain %s: %w", v, id, err)
	}
	// The new version has the old one's content: cache it under both.
	s.docs.Put(id, ch.Version, doc)
	ch.Doc = doc
	return ch, nil
}

// NameVersion saves the chain's current document again as a new version
// named message (VersionNamed): a point a person chose to mark, which the
// history shows apart from the autosaves. History is never rewritten, so the
// autosave it names stays as it was. baseVersion, when not 0, is the version
// the person was looking at: if the chain has moved on since, nothing is
// written and a *VersionConflictError says so.
func (s *Store) NameVersion(ctx context.Context, id string, baseVersion int, message string) (*store.Chain, error) {
	message = strings.TrimSpace(message)
	switch {
	case message == "":
		return nil, fmt.Errorf("store: name a version of chain %s: %w: the message (the version's name) is empty", id, store.ErrInvalid)
	case len(message) > store.MaxVersionMessage:
		return nil, fmt.Errorf("store: name a version of chain %s: %w: the message is %d bytes, at most %d", id, store.ErrInvalid, len(message), store.MaxVersionMessage)
	}
	now := s.now().UTC()
	var ch *store.Chain
	var doc *chain.Chain
	err := s.writeTx(ctx, func(tx *Tx) error {
		cur, err := s.lockCurrent(ctx, tx, id, baseVersion)
		if err != nil {
			return err
		}
		_, body, err := getVersion(ctx, tx, id, cur)
		if err != nil {
			return err
		}
		if doc, err = s.loadDoc(ctx, tx, id, cur); err != nil {
			return err
		}
		ch, err = s.saveVersion(ctx, tx, id, &cur, doc, body, message, store.VersionNamed, now, false)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: name a version of chain %s: %w", id, err)
	}
	s.docs.Put(id, ch.Version, doc)
	ch.Doc = doc
	return ch, nil
}
