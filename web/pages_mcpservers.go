package web

import (
	"net/http"
	"strings"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

func (s *Server) pageMCPServers(c echo.Context) error {
	return s.renderMCPServers(c, http.StatusOK, "", c.QueryParam("saved"))
}

func (s *Server) renderMCPServers(c echo.Context, status int, problem, saved string) error {
	ctx := c.Request().Context()
	list, err := s.db.ListMCPServers(ctx)
	if err != nil {
		return storeErr(err, "mcp servers")
	}
	rows := make([]views.MCPServerRow, 0, len(list))
	for _, r := range list {
		st := s.mcpStatusOf(r)
		row := views.MCPServerRow{Name: r.Name, Transport: r.Transport, Enabled: r.Enabled, Target: r.URL, Credential: r.Credential,
			State: st.State, Reason: st.Reason, Tools: st.Tools, ServerInfo: st.ServerInfo, UpdatedBy: r.UpdatedBy, Updated: r.Updated}
		if r.Transport == store.MCPTransportStdio {
			row.Target = strings.Join(append([]string{r.Command}, r.Args...), " ")
		}
		for _, d := range st.Dropped {
			row.Dropped = append(row.Dropped, d.Name+": "+d.Reason)
		}
		rows = append(rows, row)
	}
	var creds []string
	if s.vault != nil {
		if cs, err := s.vault.List(ctx); err == nil {
			for _, cr := range cs {
				if len(cr.Chains) == 0 {
					creds = append(creds, cr.Name)
				}
			}
		}
	}
	var allowed []string
	if s.mcpHost != nil {
		allowed = s.mcpHost.Allowed()
	}
	return renderPage(c, status, views.MCPServersPage(rows, creds, allowed, problem, saved))
}

// pageSaveMCPServer adds a server, or replaces the one of that name.
func (s *Server) pageSaveMCPServer(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return apiError(EBADREQUEST, "bad_form", "the form cannot be read: "+err.Error(), nil)
	}
	name := strings.TrimSpace(form.Get("name"))
	if err := s.mcpOn(); err != nil {
		return s.afterMCPForm(c, name, err)
	}
	enabled := form.Get("enabled") != ""
	body := mcpServerBody{Name: name, Transport: form.Get("transport"), Enabled: &enabled}
	if body.Transport == store.MCPTransportStdio {
		body.Command = strings.TrimSpace(form.Get("command"))
		body.Args = lines(form.Get("args"))
		body.Env = map[string]string{}
		for _, l := range lines(form.Get("env")) {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return s.afterMCPForm(c, name, apiError(EINVALID, "invalid_mcp_server", "mcp server "+quote(name)+": env: "+quote(l)+" has no '=': write NAME=value", nil))
			}
			body.Env[strings.TrimSpace(k)] = v
		}
	} else {
		body.URL = strings.TrimSpace(form.Get("url"))
		body.Credential = form.Get("credential")
		hs, err := parseHeaderLines(form.Get("headers"))
		if err != nil {
			return s.afterMCPForm(c, name, apiError(EINVALID, "invalid_mcp_server", "mcp server "+quote(name)+": headers: "+err.Error(), nil))
		}
		body.Headers = map[string]string{}
		for k, v := range hs {
			body.Headers[k], _ = v.(string)
		}
	}
	ctx := c.Request().Context()
	_, getErr := s.db.GetMCPServer(ctx, name)
	_, err = s.saveMCPServer(ctx, callerOf(c).Name, body, getErr != nil)
	return s.afterMCPForm(c, name, err)
}

// lines splits a textarea into its non-empty lines, trimmed.
func lines(text string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (s *Server) pageRemoveMCPServer(c echo.Context) error {
	name := pageParam(c, "name")
	err := s.db.RemoveMCPServer(c.Request().Context(), name)
	if err == nil {
		s.log.Info("mcp server removed", "server", name, "by", callerOf(c).Name)
		if s.mcpHost != nil {
			s.reloadMCP(c.Request().Context())
		}
		return c.Redirect(http.StatusSeeOther, "/settings/mcp-servers")
	}
	return s.afterMCPForm(c, name, mcpServerErr(err, name))
}

// afterMCPForm: a redirect after success, the page with the problem
// otherwise.
func (s *Server) afterMCPForm(c echo.Context, name string, err error) error {
	if err == nil {
		return c.Redirect(http.StatusSeeOther, "/settings/mcp-servers?saved="+name)
	}
	if status, msg := s.problemOf(err); status != 0 {
		return s.renderMCPServers(c, status, msg, "")
	}
	return err
}
