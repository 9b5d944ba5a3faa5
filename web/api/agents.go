package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// agentJSON is an agent as GET /v1/agents lists it.
type agentJSON struct {
	Name         string   `json:"name"`
	Description  string   `json:"description,omitempty"`
	Kind         string   `json:"kind"` // model | tool | chain
	Model        string   `json:"model,omitempty"`
	ModelURL     string   `json:"model_url,omitempty"`
	Tool         string   `json:"tool,omitempty"`
	Chain        string   `json:"chain,omitempty"`
	HasChain     bool     `json:"has_chain"`
	Mode         string   `json:"mode,omitempty"`
	MaxDepth     int      `json:"max_depth,omitempty"`
	Links        int      `json:"links,omitempty"`
	OutputSchema any      `json:"output_schema,omitempty"`
	OnComplete   []string `json:"on_complete,omitempty"` // the agents its chain names directly
	// Source is where the agent comes from: "store" (Version is its latest
	// version) or "file" (File is the file).
	Source  string `json:"source"`
	Version int    `json:"version,omitempty"`
	File    string `json:"file,omitempty"`
}

func (s *Admin) agentSummary(d *agent.Definition) agentJSON {
	out := agentJSON{Name: d.Name, Description: d.Description, Kind: d.Kind(), Tool: d.Tool, Chain: d.Chain, HasChain: d.HasChain(),
		Source: "file", File: d.File}
	if d.Stored {
		out.Source, out.Version = "store", d.Version
	}
	if d.Model != nil {
		out.Model, out.ModelURL = d.Model.Name, redact.URL(d.Model.URL)
	}
	if sc := d.Schema(); sc != nil {
		out.OutputSchema = sc.Raw()
	}
	if d.HasChain() {
		out.Mode, out.MaxDepth = d.Spec.Chain.ModeOrDefault(), d.Spec.Chain.MaxDepthOrDefault()
		for _, r := range d.Spec.Chain.OnComplete {
			out.OnComplete = append(out.OnComplete, r.Agent)
		}
		if g, ok := s.Agents.Graph(d.Name); ok {
			out.Links = len(g.Links)
		}
	}
	return out
}

// GET /v1/agents
func (s *Admin) ListAgents(c echo.Context) error {
	list := []agentJSON{}
	for _, name := range s.Agents.Names() {
		d, _ := s.Agents.Get(name)
		list = append(list, s.agentSummary(d))
	}
	skipped := []map[string]string{}
	for name, why := range s.Agents.Skipped() {
		skipped = append(skipped, map[string]string{"name": name, "error": why})
	}
	slices.SortFunc(skipped, func(a, b map[string]string) int { return strings.Compare(a["name"], b["name"]) })
	return c.JSON(http.StatusOK, map[string]any{"agents": list, "total": len(list), "not_loaded": skipped})
}

// agentSaveRequest is the body of POST /v1/agents and PUT
// /v1/agents/{name}: the agent's definition as an agent file holds it
// (source, YAML or JSON text), or a node of a chain that defines its agent
// (node), saved under name.
type agentSaveRequest struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Source      string      `json:"source"`
	Node        *chain.Node `json:"node"`
	Message     string      `json:"message"`
	BaseVersion int         `json:"base_version"`
}

func (req agentSaveRequest) save() (ops.AgentSave, error) {
	if (req.Source == "") == (req.Node == nil) {
		return ops.AgentSave{}, httpcore.Error(httpcore.EBADREQUEST, "bad_agent_body", `the body needs the agent as source (its YAML or JSON) or as node (a node that defines it), one of them: {"name": "...", "source": "..."}`, nil)
	}
	return ops.AgentSave{Name: req.Name, Description: req.Description, Source: req.Source, Node: req.Node, Message: req.Message, BaseVersion: req.BaseVersion}, nil
}

// POST /v1/agents: stores a new agent (version 1).
func (s *Admin) CreateAgent(c echo.Context) error {
	var req agentSaveRequest
	if err := httpcore.BindJSON(c, &req); err != nil {
		return err
	}
	save, err := req.save()
	if err != nil {
		return err
	}
	save.BaseVersion = 0
	a, err := s.SaveAgent(c.Request().Context(), httpcore.CallerOf(c).Name, save)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.storedAgentJSON(a))
}

// PUT /v1/agents/{name}: stores a new version of a stored agent;
// base_version is the version the edit started from.
func (s *Admin) PutAgent(c echo.Context) error {
	var req agentSaveRequest
	if err := httpcore.BindJSON(c, &req); err != nil {
		return err
	}
	save, err := req.save()
	if err != nil {
		return err
	}
	save.Name = c.Param("name")
	if save.BaseVersion <= 0 {
		return httpcore.Error(httpcore.EBADREQUEST, "missing_base_version", "base_version: the version the edit started from (GET /v1/agents/{name} gives it)", map[string]any{"path": "base_version"})
	}
	a, err := s.SaveAgent(c.Request().Context(), httpcore.CallerOf(c).Name, save)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.storedAgentJSON(a))
}

// DELETE /v1/agents/{name}: deletes a stored agent and its versions.
func (s *Admin) DeleteAgent(c echo.Context) error {
	if err := s.Env.DeleteAgent(c.Request().Context(), httpcore.CallerOf(c).Name, c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// GET /v1/agents/{name}/versions: a stored agent's versions, newest first,
// each with its source.
func (s *Admin) AgentVersions(c echo.Context) error {
	vs, err := s.DB.AgentVersions(c.Request().Context(), c.Param("name"))
	if err != nil {
		if d, ok := s.Agents.Get(c.Param("name")); ok && d.File != "" {
			return httpcore.Error(httpcore.ENOTFOUND, "agent_from_file", fmt.Sprintf("agent %q is loaded from %s: it has no stored versions", d.Name, d.File), nil)
		}
		return httpcore.StoreErr(err, "agent "+ops.Quote(c.Param("name")))
	}
	out := make([]storedAgentJSON, len(vs))
	for i := range vs {
		out[i] = s.storedAgentJSON(&vs[i])
	}
	return c.JSON(http.StatusOK, map[string]any{"versions": out})
}

// storedAgentJSON is an agent's stored version.
type storedAgentJSON struct {
	Name        string    `json:"name"`
	Version     int       `json:"version"`
	Description string    `json:"description,omitempty"`
	Source      string    `json:"source"`
	Message     string    `json:"message,omitempty"`
	CreatedBy   string    `json:"created_by,omitempty"`
	Created     time.Time `json:"created"`
	UpdatedBy   string    `json:"updated_by,omitempty"`
	Updated     time.Time `json:"updated"`
}

func (s *Admin) storedAgentJSON(a *store.Agent) storedAgentJSON {
	return storedAgentJSON{Name: a.Name, Version: a.Version, Description: a.Description, Source: a.Source, Message: a.Message,
		CreatedBy: a.CreatedBy, Created: a.Created, UpdatedBy: a.UpdatedBy, Updated: a.Updated}
}

func (s *Admin) lookupAgent(name string) (*agent.Definition, error) {
	d, ok := s.Agents.Get(name)
	if !ok {
		return nil, httpcore.Error(httpcore.ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), map[string]any{"name": name})
	}
	return d, nil
}

// GET /v1/agents/{name}: the summary plus the definition (never a key's value).
func (s *Admin) GetAgent(c echo.Context) error {
	d, err := s.lookupAgent(c.Param("name"))
	if err != nil {
		return err
	}
	out := map[string]any{"agent": s.agentSummary(d), "definition": d}
	if d.Stored {
		if a, err := s.DB.GetAgent(c.Request().Context(), d.Name); err == nil {
			out["stored"] = s.storedAgentJSON(a)
		}
	}
	return c.JSON(http.StatusOK, out)
}

// GET /v1/agents/{name}/chain: the expanded graph, without running anything.
func (s *Admin) AgentChain(c echo.Context) error {
	d, err := s.lookupAgent(c.Param("name"))
	if err != nil {
		return err
	}
	g, ok := s.Agents.Graph(d.Name)
	if !ok {
		return httpcore.Error(httpcore.ENOTFOUND, "no_chain", fmt.Sprintf("agent %q declares no chain (spec.chain)", d.Name), map[string]any{"name": d.Name})
	}
	return c.JSON(http.StatusOK, g)
}

// agentRunRequest is the body of POST /v1/agents/{name}/run.
type agentRunRequest struct {
	Query     any            `json:"query"`
	SessionID string         `json:"session_id"`
	Context   map[string]any `json:"context"`
}

// POST /v1/agents/{name}/run {query, session_id, context}: runs the agent
// (and its chain) as an ordinary studio run and answers with the invoked
// agent's result and the chain report, whatever the chain's status.
func (s *Admin) RunAgent(c echo.Context) error {
	d, err := s.lookupAgent(c.Param("name"))
	if err != nil {
		return err
	}
	var req agentRunRequest
	if err := httpcore.BindJSON(c, &req); err != nil {
		return err
	}
	if req.Query == nil {
		return httpcore.Error(httpcore.EBADREQUEST, "missing_query", `the body needs a query: {"query": "...", "session_id": "...", "context": {...}}`, map[string]any{"path": "query"})
	}
	doc, _ := s.Agents.RunChain(d.Name)
	res, err := s.Runs.RunAdHoc(c.Request().Context(), doc, agent.RunInput(req.Query, req.SessionID, req.Context), ops.RunKindAgent, nil)
	if res == nil {
		if err == nil {
			err = errors.New("the run did not start")
		}
		return err
	}
	if err != nil {
		s.Log.Error("agent run: host error", "agent", d.Name, "run_id", res.RunID, "err", err)
	}
	return c.JSON(http.StatusOK, s.Agents.Report(d.Name, res))
}
