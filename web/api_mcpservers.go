package web

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/mcp"
	"github.com/chainstudio/studio/internal/mcphost"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// mcpServerRoutes: admins register MCP servers; editors and viewers see
// their names and status (what the palette's MCP tools depend on).
func (s *Server) mcpServerRoutes(e *echo.Echo) {
	v1 := e.Group("/v1")
	v1.GET("/mcp-servers", s.listMCPServers)
	v1.POST("/mcp-servers", s.addMCPServer)
	v1.GET("/mcp-servers/:name", s.getMCPServer)
	v1.PUT("/mcp-servers/:name", s.putMCPServer)
	v1.DELETE("/mcp-servers/:name", s.removeMCPServer)
	e.GET("/settings/mcp-servers", s.pageMCPServers)
	e.POST("/settings/mcp-servers", s.pageSaveMCPServer)
	e.POST("/settings/mcp-servers/:name/remove", s.pageRemoveMCPServer)
}

// mcpStatusJSON is a server's live status in this process.
type mcpStatusJSON struct {
	State       string            `json:"state"` // disabled, connecting, available, unavailable
	Reason      string            `json:"reason,omitempty"`
	Since       *time.Time        `json:"since,omitempty"`
	Tools       int               `json:"tools"`
	Dropped     []mcp.DroppedTool `json:"dropped"`
	DroppedMore int               `json:"dropped_more,omitempty"`
	ServerInfo  string            `json:"server_info,omitempty"`
}

// mcpServerJSON is a server as the API shows it. Viewers and editors get
// the name, transport, enabled and status; admins its configuration too
// (which holds no secret: those are in the credential it names).
type mcpServerJSON struct {
	Name       string            `json:"name"`
	Transport  string            `json:"transport"`
	Enabled    bool              `json:"enabled"`
	Status     mcpStatusJSON     `json:"status"`
	URL        string            `json:"url,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Credential string            `json:"credential,omitempty"`
	Command    string            `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	CreatedBy  string            `json:"created_by,omitempty"`
	Created    *time.Time        `json:"created,omitempty"`
	UpdatedBy  string            `json:"updated_by,omitempty"`
	Updated    *time.Time        `json:"updated,omitempty"`
}

// mcpStatusOf is the host's status of a record; a record this process has
// not read yet (another process just added it) is connecting.
func (s *Server) mcpStatusOf(r store.MCPServer) mcpStatusJSON {
	out := mcpStatusJSON{State: mcp.StateConnecting, Dropped: []mcp.DroppedTool{}}
	if !r.Enabled {
		out.State = mcphost.StateDisabled
	}
	if s.mcpHost == nil {
		return out
	}
	st, ok := s.mcpHost.StatusOf(r.Name)
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

func (s *Server) toMCPServerJSON(r store.MCPServer, full bool) mcpServerJSON {
	out := mcpServerJSON{Name: r.Name, Transport: r.Transport, Enabled: r.Enabled, Status: s.mcpStatusOf(r)}
	if !full {
		return out
	}
	out.URL, out.Headers, out.Credential = r.URL, r.Headers, r.Credential
	out.Command, out.Args, out.Env = r.Command, r.Args, r.Env
	out.CreatedBy, out.Created = r.CreatedBy, &r.Created
	out.UpdatedBy, out.Updated = r.UpdatedBy, &r.Updated
	return out
}

// mcpServerBody is what POST and PUT take. enabled defaults to true.
type mcpServerBody struct {
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

func (b mcpServerBody) record() store.MCPServer {
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

// mcpOn answers 503 when this process keeps no MCP connections.
func (s *Server) mcpOn() error {
	if s.mcpHost == nil {
		return apiError(EUNAVAILABLE, "mcp_off", "this studio was started without MCP servers (no host was given)", nil)
	}
	return nil
}

// checkMCPServer is every check a record passes before it is stored: its
// shape, this host's policy (a stdio program on the allow-list), and the
// credential it names (which must exist and be open to every chain, since
// every chain may call the server's tools).
func (s *Server) checkMCPServer(ctx context.Context, r *store.MCPServer) error {
	if err := s.mcpHost.Check(r); err != nil {
		return mcpServerErr(err, r.Name)
	}
	if r.Credential == "" {
		return nil
	}
	if s.vault == nil {
		return apiError(EINVALID, "invalid_mcp_server", "mcp server "+quote(r.Name)+": credential: this studio keeps no credentials", nil)
	}
	cr, err := s.vault.Get(ctx, r.Credential)
	if store.ErrorCode(err) == store.ENOTFOUND {
		return apiError(EINVALID, "invalid_mcp_server", "mcp server "+quote(r.Name)+": credential: "+quote(r.Credential)+" does not exist (add it in Settings → Credentials first)", nil)
	}
	if err != nil {
		return storeErr(err, "credential "+quote(r.Credential))
	}
	if len(cr.Chains) > 0 {
		return apiError(EINVALID, "invalid_mcp_server", "mcp server "+quote(r.Name)+": credential: "+quote(r.Credential)+" is limited to some chains, but every chain may call a server's tools; name a credential open to every chain", nil)
	}
	return nil
}

func mcpServerErr(err error, name string) error {
	switch store.ErrorCode(err) {
	case store.EINVALID:
		return apiError(EINVALID, "invalid_mcp_server", strings.TrimPrefix(err.Error(), "invalid: "), nil)
	case store.ECONFLICT:
		return apiError(ECONFLICT, "name_taken", "an MCP server named "+quote(name)+" exists already", nil)
	}
	return storeErr(err, "mcp server "+quote(name))
}

// reloadMCP applies a change to this process's connections now (the others
// follow within their poll).
func (s *Server) reloadMCP(ctx context.Context) {
	if err := s.mcpHost.Reload(ctx); err != nil {
		s.log.Warn("mcp: could not apply the change now; the next poll will", "err", err)
	}
}

// GET /v1/mcp-servers: every registered server with its live status.
func (s *Server) listMCPServers(c echo.Context) error {
	list, err := s.db.ListMCPServers(c.Request().Context())
	if err != nil {
		return storeErr(err, "mcp servers")
	}
	full := roleAllows(callerOf(c).Role, actAdmin)
	out := make([]mcpServerJSON, 0, len(list))
	for _, r := range list {
		out = append(out, s.toMCPServerJSON(r, full))
	}
	return c.JSON(http.StatusOK, map[string]any{"servers": out})
}

func (s *Server) getMCPServer(c echo.Context) error {
	r, err := s.db.GetMCPServer(c.Request().Context(), c.Param("name"))
	if err != nil {
		return storeErr(err, "mcp server "+quote(c.Param("name")))
	}
	return c.JSON(http.StatusOK, s.toMCPServerJSON(*r, roleAllows(callerOf(c).Role, actAdmin)))
}

// POST /v1/mcp-servers (admins): 201 with the server.
func (s *Server) addMCPServer(c echo.Context) error {
	if err := s.mcpOn(); err != nil {
		return err
	}
	var req mcpServerBody
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	r, err := s.saveMCPServer(c.Request().Context(), callerOf(c).Name, req, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.toMCPServerJSON(*r, true))
}

// PUT /v1/mcp-servers/:name (admins): the body replaces the server's
// configuration; the name cannot change (chains name it).
func (s *Server) putMCPServer(c echo.Context) error {
	if err := s.mcpOn(); err != nil {
		return err
	}
	var req mcpServerBody
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	name := c.Param("name")
	if req.Name != "" && req.Name != name {
		return apiError(EINVALID, "invalid_mcp_server", "an MCP server cannot be renamed (chains name its tools mcp:"+name+"/…): add one under the new name", nil)
	}
	req.Name = name
	r, err := s.saveMCPServer(c.Request().Context(), callerOf(c).Name, req, false)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.toMCPServerJSON(*r, true))
}

// saveMCPServer checks and stores a server (added, or replacing the one of
// its name) and applies it to this process's connections.
func (s *Server) saveMCPServer(ctx context.Context, who string, req mcpServerBody, add bool) (*store.MCPServer, error) {
	r := req.record()
	if err := s.checkMCPServer(ctx, &r); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	r.UpdatedBy, r.Updated = who, now
	if add {
		r.CreatedBy, r.Created = who, now
		if err := s.db.AddMCPServer(ctx, &r); err != nil {
			return nil, mcpServerErr(err, r.Name)
		}
		s.log.Info("mcp server added", "server", r.Name, "transport", r.Transport, "by", who)
	} else {
		if err := s.db.UpdateMCPServer(ctx, &r); err != nil {
			return nil, mcpServerErr(err, r.Name)
		}
		s.log.Info("mcp server changed", "server", r.Name, "by", who)
	}
	s.reloadMCP(ctx)
	saved, err := s.db.GetMCPServer(ctx, r.Name)
	if err != nil {
		return nil, storeErr(err, "mcp server "+quote(r.Name))
	}
	return saved, nil
}

func (s *Server) removeMCPServer(c echo.Context) error {
	name := c.Param("name")
	if err := s.db.RemoveMCPServer(c.Request().Context(), name); err != nil {
		return storeErr(err, "mcp server "+quote(name))
	}
	s.log.Info("mcp server removed", "server", name, "by", callerOf(c).Name)
	if s.mcpHost != nil {
		s.reloadMCP(c.Request().Context())
	}
	return c.NoContent(http.StatusNoContent)
}
