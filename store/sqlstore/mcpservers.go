package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chainstudio/studio/store"
)

// MCP servers: one row each, their maps and lists as JSON. Both backends
// run this SQL.

const mcpServerColumns = `name, transport, url, headers, credential, command, args, env, enabled, created_by, created_at, updated_by, updated_at`

func mcpServerArgs(s *store.MCPServer) (headers, args, env string, err error) {
	enc := func(v any) string {
		if err != nil {
			return ""
		}
		var b []byte
		b, err = json.Marshal(v)
		return string(b)
	}
	h, a, e := s.Headers, s.Args, s.Env
	if h == nil {
		h = map[string]string{}
	}
	if a == nil {
		a = []string{}
	}
	if e == nil {
		e = map[string]string{}
	}
	headers, args, env = enc(h), enc(a), enc(e)
	if err != nil {
		return "", "", "", fmt.Errorf("store: mcp server %q: %w", s.Name, err)
	}
	return headers, args, env, nil
}

// AddMCPServer stores a new server; a name in use is ErrNameTaken.
func (s *Store) AddMCPServer(ctx context.Context, srv *store.MCPServer) error {
	if err := store.CheckMCPServer(srv); err != nil {
		return err
	}
	headers, args, env, err := mcpServerArgs(srv)
	if err != nil {
		return err
	}
	err = s.writeTx(ctx, func(tx *Tx) error {
		if _, err := getMCPServer(ctx, tx, srv.Name); err == nil {
			return fmt.Errorf("mcp server %q already exists: %w", srv.Name, store.ErrNameTaken)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO mcp_servers (`+mcpServerColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			srv.Name, srv.Transport, srv.URL, headers, srv.Credential, srv.Command, args, env, boolInt(srv.Enabled),
			srv.CreatedBy, srv.Created.UnixMicro(), srv.UpdatedBy, srv.Updated.UnixMicro())
		if err != nil {
			return fmt.Errorf("store: add mcp server %q: %w", srv.Name, err)
		}
		return nil
	})
	if s.d.IsUniqueViolation(err) { // a concurrent add of the same name
		return fmt.Errorf("mcp server %q already exists: %w", srv.Name, store.ErrNameTaken)
	}
	return err
}

// UpdateMCPServer replaces the server named srv.Name (its creation stays).
func (s *Store) UpdateMCPServer(ctx context.Context, srv *store.MCPServer) error {
	if err := store.CheckMCPServer(srv); err != nil {
		return err
	}
	headers, args, env, err := mcpServerArgs(srv)
	if err != nil {
		return err
	}
	return s.writeTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE mcp_servers SET transport = ?, url = ?, headers = ?, credential = ?, command = ?, args = ?, env = ?, enabled = ?, updated_by = ?, updated_at = ? WHERE name = ?`,
			srv.Transport, srv.URL, headers, srv.Credential, srv.Command, args, env, boolInt(srv.Enabled), srv.UpdatedBy, srv.Updated.UnixMicro(), srv.Name)
		if err != nil {
			return fmt.Errorf("store: update mcp server %q: %w", srv.Name, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("%w: no mcp server named %q", store.ErrNotFound, srv.Name)
		}
		return nil
	})
}

// GetMCPServer returns the server named name.
func (s *Store) GetMCPServer(ctx context.Context, name string) (*store.MCPServer, error) {
	return getMCPServer(ctx, s.r, name)
}

func getMCPServer(ctx context.Context, q Queryer, name string) (*store.MCPServer, error) {
	out, err := mcpServers(ctx, q, `SELECT `+mcpServerColumns+` FROM mcp_servers WHERE name = ?`, name)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no mcp server named %q", store.ErrNotFound, name)
	}
	return &out[0], nil
}

// ListMCPServers lists the servers by name.
func (s *Store) ListMCPServers(ctx context.Context) ([]store.MCPServer, error) {
	return mcpServers(ctx, s.r, `SELECT `+mcpServerColumns+` FROM mcp_servers ORDER BY name`)
}

// RemoveMCPServer deletes the server named name.
func (s *Store) RemoveMCPServer(ctx context.Context, name string) error {
	return s.writeTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM mcp_servers WHERE name = ?`, name)
		if err != nil {
			return fmt.Errorf("store: remove mcp server %q: %w", name, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("%w: no mcp server named %q", store.ErrNotFound, name)
		}
		return nil
	})
}

func mcpServers(ctx context.Context, q Queryer, query string, args ...any) ([]store.MCPServer, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read mcp servers: %w", err)
	}
	defer rows.Close()
	out := []store.MCPServer{}
	for rows.Next() {
		var s store.MCPServer
		var headers, argv, env string
		var enabled int
		var created, updated int64
		if err := rows.Scan(&s.Name, &s.Transport, &s.URL, &headers, &s.Credential, &s.Command, &argv, &env, &enabled, &s.CreatedBy, &created, &s.UpdatedBy, &updated); err != nil {
			return nil, fmt.Errorf("store: read mcp servers: %w", err)
		}
		for what, dst := range map[string]any{"headers": &s.Headers, "args": &s.Args, "env": &s.Env} {
			src := map[string]string{"headers": headers, "args": argv, "env": env}[what]
			if err := json.Unmarshal([]byte(src), dst); err != nil {
				return nil, fmt.Errorf("store: mcp server %q: %s: %w", s.Name, what, err)
			}
		}
		if len(s.Headers) == 0 { // absent and empty read the same: nil
			s.Headers = nil
		}
		if len(s.Args) == 0 {
			s.Args = nil
		}
		if len(s.Env) == 0 {
			s.Env = nil
		}
		s.Enabled = enabled != 0
		s.Created = time.UnixMicro(created).UTC()
		s.Updated = time.UnixMicro(updated).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read mcp servers: %w", err)
	}
	return out, nil
}
