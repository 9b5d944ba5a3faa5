package api

import (
	"net/http"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// mcpServerJSON is a server as the API shows it. Viewers and editors get
// the name, transport, enabled and status; admins its configuration too
// (which holds no secret: those are in the credential it names).
type mcpServerJSON struct {
	Name       string            `json:"name"`
	Transport  string            `json:"transport"`
	Enabled    bool              `json:"enabled"`
	Status     ops.McpStatusJSON `json:"status"`
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

func (s *Admin) toMCPServerJSON(r store.MCPServer, full bool) mcpServerJSON {
	out := mcpServerJSON{Name: r.Name, Transport: r.Transport, Enabled: r.Enabled, Status: s.McpStatusOf(r)}
	if !full {
		return out
	}
	out.URL, out.Headers, out.Credential = r.URL, r.Headers, r.Credential
	out.Command, out.Args, out.Env = r.Command, r.Args, r.Env
	out.CreatedBy, out.Created = r.CreatedBy, &r.Created
	out.UpdatedBy, out.Updated = r.UpdatedBy, &r.Updated
	return out
}

// GET /v1/mcp-servers: every registered server with its live status.
func (s *Admin) ListMCPServers(c echo.Context) error {
	list, err := s.DB.ListMCPServers(c.Request().Context())
	if err != nil {
		return httpcore.StoreErr(err, "mcp servers")
	}
	full := httpcore.RoleAllows(httpcore.CallerOf(c).Role, httpcore.ActAdmin)
	out := make([]mcpServerJSON, 0, len(list))
	for _, r := range list {
		out = append(out, s.toMCPServerJSON(r, full))
	}
	return c.JSON(http.StatusOK, map[string]any{"servers": out})
}

func (s *Admin) GetMCPServer(c echo.Context) error {
	r, err := s.DB.GetMCPServer(c.Request().Context(), c.Param("name"))
	if err != nil {
		return httpcore.StoreErr(err, "mcp server "+ops.Quote(c.Param("name")))
	}
	return c.JSON(http.StatusOK, s.toMCPServerJSON(*r, httpcore.RoleAllows(httpcore.CallerOf(c).Role, httpcore.ActAdmin)))
}

// POST /v1/mcp-servers (admins): 201 with the server.
func (s *Admin) AddMCPServer(c echo.Context) error {
	if err := s.McpOn(); err != nil {
		return err
	}
	var req ops.McpServerBody
	if err := httpcore.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := s.SaveMCPServer(c.Request().Context(), httpcore.CallerOf(c).Name, req, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.toMCPServerJSON(*r, true))
}

// PUT /v1/mcp-servers/:name (admins): the body replaces the server's
// configuration; the name cannot change (chains name it).
func (s *Admin) PutMCPServer(c echo.Context) error {
	if err := s.McpOn(); err != nil {
		return err
	}
	var req ops.McpServerBody
	if err := httpcore.BindJSON(c, &req); err != nil {
		return err
	}
	name := c.Param("name")
	if req.Name != "" && req.Name != name {
		return httpcore.Error(httpcore.EINVALID, "invalid_mcp_server", "an MCP server cannot be renamed (chains name its tools mcp:"+name+"/…): add one under the new name", nil)
	}
	req.Name = name
	r, err := s.SaveMCPServer(c.Request().Context(), httpcore.CallerOf(c).Name, req, false)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.toMCPServerJSON(*r, true))
}

func (s *Admin) RemoveMCPServer(c echo.Context) error {
	name := c.Param("name")
	if err := s.Env.RemoveMCPServer(c, name); err != nil {
		return httpcore.StoreErr(err, "mcp server "+ops.Quote(name))
	}
	return c.NoContent(http.StatusNoContent)
}
