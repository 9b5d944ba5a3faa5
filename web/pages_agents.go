package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// agentPageRoutes: the Agents pages (list, one agent with its expanded chain,
// run from a form).
func (s *Server) agentPageRoutes(e *echo.Echo) {
	e.GET("/agents", s.pageAgents)
	e.GET("/agents/:name", s.pageAgent)
	e.POST("/agents/:name/run", s.pageRunAgent)
}

func agentRow(d *agent.Definition, g *agent.Graph) views.AgentRow {
	r := views.AgentRow{Name: d.Name, Description: d.Description, Kind: d.Kind(), HasChain: d.HasChain()}
	switch {
	case d.Model != nil:
		r.Target = d.Model.Name
	case d.Tool != "":
		r.Target = d.Tool
	default:
		r.Target = d.Chain
	}
	if g != nil {
		r.Mode, r.Links = g.Mode, len(g.Links)
	}
	return r
}

func (s *Server) pageAgents(c echo.Context) error {
	var rows []views.AgentRow
	if s.agents != nil {
		for _, name := range s.agents.Names() {
			d, _ := s.agents.Get(name)
			g, _ := s.agents.Graph(name)
			rows = append(rows, agentRow(d, g))
		}
	}
	return renderPage(c, http.StatusOK, views.AgentsPage(rows, "./agents"))
}

func (s *Server) pageAgent(c echo.Context) error {
	return s.renderAgent(c, c.Param("name"), "")
}

func (s *Server) renderAgent(c echo.Context, name, problem string) error {
	if s.agents == nil {
		return apiError(ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), nil)
	}
	d, ok := s.agents.Get(name)
	if !ok {
		return apiError(ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), nil)
	}
	g, _ := s.agents.Graph(name)
	docJSON := ""
	if doc, ok := s.agents.Chain(name); ok && g != nil {
		b, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		docJSON = string(b)
	}
	status := http.StatusOK
	if problem != "" {
		status = ErrorStatusCode(EINVALID) // the page shows the problem
	}
	return renderPage(c, status, views.AgentPage(agentRow(d, g), g, docJSON, problem, agentModelView(d)))
}

// agentModelView is where a model agent's calls go, for its page; nil for
// an agent that calls no model.
func agentModelView(d *agent.Definition) *views.AgentModel {
	m := d.Model
	if m == nil {
		return nil
	}
	v := &views.AgentModel{Provider: m.ProviderOrDefault(), Name: m.Name, Credential: m.Credential, KeyEnv: m.APIKeyEnv,
		MaxSteps: d.MaxStepsOrDefault(), MaxToolCalls: d.MaxToolCallsOrDefault()}
	for i := range d.Tools {
		t := &d.Tools[i]
		v.Tools = append(v.Tools, views.AgentTool{Name: t.CallName(), Kind: t.Kind(), Target: t.Target(), Gated: t.Gated(), Describe: t.Description})
	}
	if m.URL != "" {
		v.URL = redact.URL(m.URL)
		return v
	}
	for _, p := range agent.ProviderInfos() {
		if p.Name == v.Provider && p.DefaultURL != "" {
			v.URLNote = "the provider's default, " + p.DefaultURL
			return v
		}
	}
	v.URLNote = "the base_url of credential " + m.Credential
	return v
}

// pageRunAgent runs the agent (it blocks like POST /v1/agents/{name}/run)
// and goes to the run's page.
func (s *Server) pageRunAgent(c echo.Context) error {
	name := c.Param("name")
	if s.agents == nil {
		return apiError(ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), nil)
	}
	d, ok := s.agents.Get(name)
	if !ok {
		return apiError(ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), nil)
	}
	query := strings.TrimSpace(c.FormValue("query"))
	if query == "" {
		return s.renderAgent(c, name, "Write a query: it is what the agent answers.")
	}
	var ctxMap map[string]any
	if raw := strings.TrimSpace(c.FormValue("context")); raw != "" {
		if err := json.Unmarshal([]byte(raw), &ctxMap); err != nil {
			return s.renderAgent(c, name, "The context is not a JSON object: "+err.Error())
		}
	}
	var context any
	if ctxMap != nil {
		context = ctxMap
	}
	doc, _ := s.agents.RunChain(d.Name)
	res, err := s.runs.RunAdHoc(c.Request().Context(), doc, agent.RunInput(query, "", context), runKindAgent, nil)
	if res == nil {
		if err == nil {
			err = errors.New("the run did not start")
		}
		return s.renderAgent(c, name, "The run could not start: "+err.Error())
	}
	return c.Redirect(http.StatusSeeOther, "/runs/"+res.RunID)
}
