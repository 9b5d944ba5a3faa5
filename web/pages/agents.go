package pages

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

func agentRow(d *agent.Definition, g *agent.Graph) views.AgentRow {
	r := views.AgentRow{Name: d.Name, Description: d.Description, Kind: d.Kind(), HasChain: d.HasChain(),
		Stored: d.Stored, Version: d.Version, File: d.File}
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
	var skipped []views.AgentSkipped
	for name, why := range s.Agents.Skipped() {
		skipped = append(skipped, views.AgentSkipped{Name: name, Error: why})
	}
	slices.SortFunc(skipped, func(a, b views.AgentSkipped) int { return strings.Compare(a.Name, b.Name) })
	return RenderPage(c, http.StatusOK, views.AgentsPage(rows, skipped, "./agents"))
}

// newAgentSource is what the New agent form starts from: a model agent
// with every common field, ready to adapt.
const newAgentSource = `name: my-agent
description: What it does, for the people who pick it.
model:
  provider: openai          # openai (and compatible servers), anthropic or gemini
  name: gpt-4o-mini
  credential: openai-api    # a credential of the provider's type (Settings → Credentials)
  temperature: 0
system_prompt: You answer in one short paragraph.
prompt: "{{ query }}"
`

// PageNewAgent is the form that stores a new agent.
func (s *Settings) PageNewAgent(c echo.Context) error {
	return RenderPage(c, http.StatusOK, views.AgentEditPage(views.AgentForm{Source: newAgentSource}))
}

// PageEditAgent is the form that stores a new version of a stored agent,
// from its latest.
func (s *Settings) PageEditAgent(c echo.Context) error {
	a, err := s.DB.GetAgent(c.Request().Context(), c.Param("name"))
	if err != nil {
		if d, ok := s.Agents.Get(c.Param("name")); ok && d.File != "" {
			return httpcore.Error(httpcore.ENOTFOUND, "agent_from_file", fmt.Sprintf("agent %q is loaded from %s: import it into the store to edit it here", d.Name, d.File), nil)
		}
		return httpcore.StoreErr(err, "agent "+ops.Quote(c.Param("name")))
	}
	return RenderPage(c, http.StatusOK, views.AgentEditPage(views.AgentForm{Name: a.Name, Source: a.Source, Version: a.Version}))
}

// PageSaveAgent stores the form's agent (new, or a new version) and goes
// to its page; a refusal shows the form again with what was typed and why.
func (s *Settings) PageSaveAgent(c echo.Context) error {
	f := views.AgentForm{Name: strings.TrimSpace(c.FormValue("name")), Source: c.FormValue("source"), Message: strings.TrimSpace(c.FormValue("message"))}
	if name := c.Param("name"); name != "" {
		f.Name = name
		v, err := strconv.Atoi(c.FormValue("base_version"))
		if err != nil || v <= 0 {
			return httpcore.Error(httpcore.EBADREQUEST, "bad_form", "base_version: the version the edit started from", nil)
		}
		f.Version = v
	}
	a, err := s.SaveAgent(c.Request().Context(), httpcore.CallerOf(c).Name, ops.AgentSave{Name: f.Name, Source: f.Source, Message: f.Message, BaseVersion: f.Version})
	if err != nil {
		var ae *httpcore.APIError
		if !errors.As(err, &ae) || (ae.Kind != httpcore.EINVALID && ae.Kind != httpcore.ECONFLICT) {
			return err
		}
		f.Problem = ae.Message
		if ae.Code == "version_conflict" {
			f.Problem += ". Copy your change, reload this page for the latest version, and apply it there."
		}
		return RenderPage(c, ae.Status(), views.AgentEditPage(f))
	}
	return c.Redirect(http.StatusSeeOther, "/agents/"+url.PathEscape(a.Name))
}

// PageImportAgent stores a file agent as it was loaded: from then on the
// stored copy runs, editable here.
func (s *Settings) PageImportAgent(c echo.Context) error {
	d, ok := s.Agents.Get(c.Param("name"))
	if !ok || d.File == "" {
		return httpcore.Error(httpcore.ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded from a file", c.Param("name")), nil)
	}
	src, err := os.ReadFile(d.File)
	if err != nil {
		return httpcore.Error(httpcore.ECONFLICT, "agent_file_gone", fmt.Sprintf("agent %q: its file %s cannot be read now: %v", d.Name, d.File, err), nil)
	}
	if _, err := s.SaveAgent(c.Request().Context(), httpcore.CallerOf(c).Name, ops.AgentSave{Name: d.Name, Source: string(src), Message: "imported from " + d.File}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/agents/"+url.PathEscape(d.Name))
}

// PageDeleteAgent deletes a stored agent and its versions.
func (s *Settings) PageDeleteAgent(c echo.Context) error {
	if err := s.Env.DeleteAgent(c.Request().Context(), httpcore.CallerOf(c).Name, c.Param("name")); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/agents")
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
	var versions []views.AgentVersion
	if d.Stored {
		vs, err := s.DB.AgentVersions(c.Request().Context(), d.Name)
		if err != nil && store.ErrorCode(err) != store.ENOTFOUND {
			return httpcore.StoreErr(err, "agent "+ops.Quote(d.Name))
		}
		for _, v := range vs {
			versions = append(versions, views.AgentVersion{Version: v.Version, By: v.UpdatedBy, At: v.Updated.Format("2006-01-02 15:04 UTC"), Message: v.Message})
		}
	}
	return RenderPage(c, status, views.AgentPage(agentRow(d, g), g, docJSON, problem, agentModelView(d, s.Providers), versions))
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
