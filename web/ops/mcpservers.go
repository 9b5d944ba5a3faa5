package ops

import (
	"context"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/mcp"
	"github.com/chainstudio/studio/internal/mcphost"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

// McpStatusJSON is a server's live status in this process.
type McpStatusJSON struct {
	State       string            `json:"state"` // disabled, connecting, available, unavailable
	Reason      string            `json:"reason,omitempty"`
	Since       *time.Time        `json:"since,omitempty"`
	Tools       int               `json:"tools"`
	Dropped     []mcp.DroppedTool `json:"dropped"`
	DroppedMore int               `json:"dropped_more,omitempty"`
	ServerInfo  string            `json:"server_info,omitempty"`
}

// McpStatusOf is the host's status of a record; a record this process has
// not read yet (another process just added it) is connecting.
func (s *Env) McpStatusOf(r store.MCPServer) McpStatusJSON {
	out := McpStatusJSON{State: mcp.StateConnecting, Dropped: []mcp.DroppedTool{}}
	if !r.Enabled {
		out.State = mcphost.StateDisabled
	}
	if s.MCP == nil {
		return out
	}
	st, ok := s.MCP.StatusOf(r.Name)
	if !ok {
		return out
	}
	out.State, out.Reason, out.Tools, out.DroppedMore, out.ServerInfo = st.State, st.Reason, st.Tools, st.DroppedMore, st.ServerInfo
	if !st.Since.IsZero() {
		since := st.Since.UTC()
		out.Since = &since
	}
	if st.Dropped != nil {
		out.Dropped = st.Dropped
	}
	return out
}

// McpServerBody is what POST and PUT take. enabled defaults to true.
type McpServerBody struct {
	Name       string            `json:"name"`
	Transport  string            `json:"transport"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers"`
	Credential string            `json:"credential"`
	Command    string            `json:"command"`
	Args       []string          `json:"args"`
	Env        map[string]string `json:"env"`
	Enabled    *bool             `json:"enabled"`
}

func (b McpServerBody) Record() store.MCPServer {
	r := store.MCPServer{Name: b.Name, Transport: b.Transport, URL: b.URL, Headers: b.Headers, Credential: b.Credential,
		Command: b.Command, Args: b.Args, Env: b.Env, Enabled: b.Enabled == nil || *b.Enabled}
	if len(r.Headers) == 0 {
		r.Headers = nil
	}
	if len(r.Args) == 0 {
		r.Args = nil
	}
	if len(r.Env) == 0 {
		r.Env = nil
	}
	return r
}

// McpOn answers 503 when this process keeps no MCP connections.
func (s *Env) McpOn() error {
	if s.MCP == nil {
		return httpcore.Error(httpcore.EUNAVAILABLE, "mcp_off", "this studio was started without MCP servers (no host was given)", nil)
	}
	return nil
}

// CheckMCPServer is every check a record passes before it is stored: its
// shape, this host's policy (a stdio program on the allow-list), and the
// credential it names (which must exist and be open to every chain, since
// every chain may call the server's tools).
func (s *Env) CheckMCPServer(ctx context.Context, r *store.MCPServer) error {
	if err := s.MCP.Check(r); err != nil {
		return McpServerErr(err, r.Name)
	}
	if r.Credential == "" {
		return nil
	}
	if s.Vault == nil {
		return httpcore.Error(httpcore.EINVALID, "invalid_mcp_server", "mcp server "+Quote(r.Name)+": credential: this studio keeps no credentials", nil)
	}
	cr, err := s.Vault.Get(ctx, r.Credential)
	if store.ErrorCode(err) == store.ENOTFOUND {
		return httpcore.Error(httpcore.EINVALID, "invalid_mcp_server", "mcp server "+Quote(r.Name)+": credential: "+Quote(r.Credential)+" does not exist (add it in Settings → Credentials first)", nil)
	}
	if err != nil {
		return httpcore.StoreErr(err, "credential "+Quote(r.Credential))
	}
	if len(cr.Chains) > 0 {
		return httpcore.Error(httpcore.EINVALID, "invalid_mcp_server", "mcp server "+Quote(r.Name)+": credential: "+Quote(r.Credential)+" is limited to some chains, but every chain may call a server's tools; name a credential open to every chain", nil)
	}
	return nil
}

func McpServerErr(err error, name string) error {
	switch store.ErrorCode(err) {
	case store.EINVALID:
		return httpcore.Error(httpcore.EINVALID, "invalid_mcp_server", strings.TrimPrefix(err.Error(), "invalid: "), nil)
	case store.ECONFLICT:
		return httpcore.Error(httpcore.ECONFLICT, "name_taken", "an MCP server named "+Quote(name)+" exists already", nil)
	}
	return httpcore.StoreErr(err, "mcp server "+Quote(name))
}

// ReloadMCP applies a change to this process's connections now (the others
// follow within their poll).
func (s *Env) ReloadMCP(ctx context.Context) {
	if err := s.MCP.Reload(ctx); err != nil {
		s.Log.Warn("mcp: could not apply the change now; the next poll will", "err", err)
	}
}

// SaveMCPServer checks and stores a server (added, or replacing the one of
// its name) and applies it to this process's connections.
func (s *Env) SaveMCPServer(ctx context.Context, who string, req McpServerBody, add bool) (*store.MCPServer, error) {
	r := req.Record()
	if err := s.CheckMCPServer(ctx, &r); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	r.UpdatedBy, r.Updated = who, now
	if add {
		r.CreatedBy, r.Created = who, now
		if err := s.DB.AddMCPServer(ctx, &r); err != nil {
			return nil, McpServerErr(err, r.Name)
		}
		s.Log.Info("mcp server added", "server", r.Name, "transport", r.Transport, "by", who)
	} else {
		if err := s.DB.UpdateMCPServer(ctx, &r); err != nil {
			return nil, McpServerErr(err, r.Name)
		}
		s.Log.Info("mcp server changed", "server", r.Name, "by", who)
	}
	s.ReloadMCP(ctx)
	saved, err := s.DB.GetMCPServer(ctx, r.Name)
	if err != nil {
		return nil, httpcore.StoreErr(err, "mcp server "+Quote(r.Name))
	}
	return saved, nil
}
