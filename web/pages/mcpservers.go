package pages

import (
	"net/http"
	"strings"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

func (s *Settings) PageMCPServers(c echo.Context) error {
	return s.renderMCPServers(c, http.StatusOK, "", c.QueryParam("saved"))
}

func (s *Settings) renderMCPServers(c echo.Context, status int, problem, saved string) error {
	ctx := c.Request().Context()
	list, err := s.DB.ListMCPServers(ctx)
	if err != nil {
		return httpcore.StoreErr(err, "mcp servers")
	}
	rows := make([]views.MCPServerRow, 0, len(list))
	for _, r := range list {
		st := s.McpStatusOf(r)
		row := views.MCPServerRow{Name: r.Name, Transport: r.Transport, Enabled: r.Enabled, Target: r.URL, Credential: r.Credential,
			State: st.State, Reason: st.Reason, Tools: st.Tools, ServerInfo: st.ServerInfo, UpdatedBy: r.UpdatedBy, Updated: r.Updated}
		if r.Transport == store.MCPTransportStdio {
			row.Target = strings.Join(append([]string{r.Command}, r.Args...), " ")
		}
		if r.Transport != store.MCPTransportStdio {
			row.Refused = s.mcpURLRefused(r.URL)
		}
		for _, d := range st.Dropped {
			row.Dropped = append(row.Dropped, d.Name+": "+d.Reason)
		}
		rows = append(rows, row)
	}
	var creds []string
	if s.Vault != nil {
		if cs, err := s.Vault.List(ctx); err == nil {
			for _, cr := range cs {
				if len(cr.Chains) == 0 {
					creds = append(creds, cr.Name)
				}
			}
		}
	}
	var allowed []string
	if s.MCP != nil {
		allowed = s.MCP.Allowed()
	}
	return RenderPage(c, status, views.MCPServersPage(rows, creds, allowed, problem, saved))
}

// mcpURLRefused says why the host will refuse to connect to an MCP server
// at raw, naming the flag that opens it; "" when it will not (or cannot
// be told without a lookup).
func (s *Settings) mcpURLRefused(raw string) string {
	if s.MCP == nil || raw == "" {
		return ""
	}
	return s.MCP.URLRefused(raw)
}

// FragMCPURLCheck is the form's warning for the URL being typed
// (GET /settings/mcp-servers/url-check?url=…): empty when the host will
// connect to it.
func (s *Settings) FragMCPURLCheck(c echo.Context) error {
	return RenderPage(c, http.StatusOK, views.MCPURLWarning(s.mcpURLRefused(strings.TrimSpace(c.QueryParam("url")))))
}

// PageSaveMCPServer adds a server, or replaces the one of that name.
func (s *Settings) PageSaveMCPServer(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_form", "the form cannot be read: "+err.Error(), nil)
	}
	name := strings.TrimSpace(form.Get("name"))
	if err := s.McpOn(); err != nil {
		return s.afterMCPForm(c, name, err)
	}
	enabled := form.Get("enabled") != ""
	body := ops.McpServerBody{Name: name, Transport: form.Get("transport"), Enabled: &enabled}
	if body.Transport == store.MCPTransportStdio {
		body.Command = strings.TrimSpace(form.Get("command"))
		body.Args = lines(form.Get("args"))
		body.Env = map[string]string{}
		for _, l := range lines(form.Get("env")) {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return s.afterMCPForm(c, name, httpcore.Error(httpcore.EINVALID, "invalid_mcp_server", "mcp server "+ops.Quote(name)+": env: "+ops.Quote(l)+" has no '=': write NAME=value", nil))
			}
			body.Env[strings.TrimSpace(k)] = v
		}
	} else {
		body.URL = strings.TrimSpace(form.Get("url"))
		body.Credential = form.Get("credential")
		hs, err := parseHeaderLines(form.Get("headers"))
		if err != nil {
			return s.afterMCPForm(c, name, httpcore.Error(httpcore.EINVALID, "invalid_mcp_server", "mcp server "+ops.Quote(name)+": headers: "+err.Error(), nil))
		}
		body.Headers = map[string]string{}
		for k, v := range hs {
			body.Headers[k], _ = v.(string)
		}
	}
	ctx := c.Request().Context()
	_, getErr := s.DB.GetMCPServer(ctx, name)
	_, err = s.SaveMCPServer(ctx, httpcore.CallerOf(c).Name, body, getErr != nil)
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

func (s *Settings) PageRemoveMCPServer(c echo.Context) error {
	name := ops.PageParam(c, "name")
	err := s.RemoveMCPServer(c, name)
	if err == nil {
		return c.Redirect(http.StatusSeeOther, "/settings/mcp-servers")
	}
	return s.afterMCPForm(c, name, ops.McpServerErr(err, name))
}

// afterMCPForm: a redirect after success, the page with the problem
// otherwise.
func (s *Settings) afterMCPForm(c echo.Context, name string, err error) error {
	if err == nil {
		return c.Redirect(http.StatusSeeOther, "/settings/mcp-servers?saved="+name)
	}
	if status, msg := s.problemOf(err); status != 0 {
		return s.renderMCPServers(c, status, msg, "")
	}
	return err
}
