package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/redact"
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
}

func (s *Admin) agentSummary(d *agent.Definition) agentJSON {
	out := agentJSON{Name: d.Name, Description: d.Description, Kind: d.Kind(), Tool: d.Tool, Chain: d.Chain, HasChain: d.HasChain()}
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
	return c.JSON(http.StatusOK, map[string]any{"agents": list, "total": len(list)})
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
	return c.JSON(http.StatusOK, map[string]any{"agent": s.agentSummary(d), "definition": d})
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
