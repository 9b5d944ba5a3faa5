package pages

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

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

func (s *Settings) PageAgents(c echo.Context) error {
	var rows []views.AgentRow
	if s.Agents != nil {
		for _, name := range s.Agents.Names() {
			d, _ := s.Agents.Get(name)
			g, _ := s.Agents.Graph(name)
			rows = append(rows, agentRow(d, g))
		}
	}
	return RenderPage(c, http.StatusOK, views.AgentsPage(rows, "./agents"))
}

func (s *Settings) PageAgent(c echo.Context) error {
	return s.renderAgent(c, c.Param("name"), "")
}

func (s *Settings) renderAgent(c echo.Context, name, problem string) error {
	if s.Agents == nil {
		return httpcore.Error(httpcore.ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), nil)
	}
	d, ok := s.Agents.Get(name)
	if !ok {
		return httpcore.Error(httpcore.ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), nil)
	}
	g, _ := s.Agents.Graph(name)
	docJSON := ""
	if doc, ok := s.Agents.Chain(name); ok && g != nil {
		b, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		docJSON = string(b)
	}
	status := http.StatusOK
	if problem != "" {
		status = httpcore.ErrorStatusCode(httpcore.EINVALID) // the page shows the problem
	}
	return RenderPage(c, status, views.AgentPage(agentRow(d, g), g, docJSON, problem, agentModelView(d, s.Providers)))
}

// agentModelView is where a model agent's calls go, for its page; nil for
// an agent that calls no model.
func agentModelView(d *agent.Definition, providers llm.Kinds) *views.AgentModel {
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
	for _, p := range agent.ProviderInfos(providers) {
		if p.Name == v.Provider && p.DefaultURL != "" {
			v.URLNote = "the provider's default, " + p.DefaultURL
			return v
		}
	}
	v.URLNote = "the base_url of credential " + m.Credential
	return v
}

// PageRunAgent runs the agent (it blocks like POST /v1/agents/{name}/run)
// and goes to the run's page.
func (s *Settings) PageRunAgent(c echo.Context) error {
	name := c.Param("name")
	if s.Agents == nil {
		return httpcore.Error(httpcore.ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), nil)
	}
	d, ok := s.Agents.Get(name)
	if !ok {
		return httpcore.Error(httpcore.ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), nil)
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
	doc, _ := s.Agents.RunChain(d.Name)
	res, err := s.Runs.RunAdHoc(c.Request().Context(), doc, agent.RunInput(query, "", context), ops.RunKindAgent, nil)
	if res == nil {
		if err == nil {
			err = errors.New("the run did not start")
		}
		return s.renderAgent(c, name, "The run could not start: "+err.Error())
	}
	return c.Redirect(http.StatusSeeOther, "/runs/"+res.RunID)
}
