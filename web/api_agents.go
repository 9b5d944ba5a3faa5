package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/labstack/echo/v4"
)

// runKindAgent is the run kind of POST /v1/agents/{name}/run in the history.
const runKindAgent = "agent"

// agentRoutes registers the agent API.
func (s *Server) agentRoutes(e *echo.Echo) {
	v1 := e.Group("/v1")
	v1.GET("/agents", s.listAgents)
	v1.GET("/agents/:name", s.getAgent)
	v1.GET("/agents/:name/chain", s.agentChain)
	v1.POST("/agents/:name/run", s.runAgent)
	v1.GET("/agents/:name/models", s.agentModels)
	v1.GET("/providers", s.listProviders)
}

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

func (s *Server) agentSummary(d *agent.Definition) agentJSON {
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
		if g, ok := s.agents.Graph(d.Name); ok {
			out.Links = len(g.Links)
		}
	}
	return out
}

// GET /v1/agents
func (s *Server) listAgents(c echo.Context) error {
	list := []agentJSON{}
	for _, name := range s.agents.Names() {
		d, _ := s.agents.Get(name)
		list = append(list, s.agentSummary(d))
	}
	return c.JSON(http.StatusOK, map[string]any{"agents": list, "total": len(list)})
}

func (s *Server) lookupAgent(name string) (*agent.Definition, error) {
	d, ok := s.agents.Get(name)
	if !ok {
		return nil, apiError(ENOTFOUND, "agent_not_found", fmt.Sprintf("no agent named %q is loaded", name), map[string]any{"name": name})
	}
	return d, nil
}

// GET /v1/agents/{name}: the summary plus the definition (never a key's value).
func (s *Server) getAgent(c echo.Context) error {
	d, err := s.lookupAgent(c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"agent": s.agentSummary(d), "definition": d})
}

// GET /v1/agents/{name}/chain: the expanded graph, without running anything.
func (s *Server) agentChain(c echo.Context) error {
	d, err := s.lookupAgent(c.Param("name"))
	if err != nil {
		return err
	}
	g, ok := s.agents.Graph(d.Name)
	if !ok {
		return apiError(ENOTFOUND, "no_chain", fmt.Sprintf("agent %q declares no chain (spec.chain)", d.Name), map[string]any{"name": d.Name})
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
func (s *Server) runAgent(c echo.Context) error {
	d, err := s.lookupAgent(c.Param("name"))
	if err != nil {
		return err
	}
	var req agentRunRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	if req.Query == nil {
		return apiError(EBADREQUEST, "missing_query", `the body needs a query: {"query": "...", "session_id": "...", "context": {...}}`, map[string]any{"path": "query"})
	}
	doc, _ := s.agents.RunChain(d.Name)
	res, err := s.runs.RunAdHoc(c.Request().Context(), doc, agent.RunInput(req.Query, req.SessionID, req.Context), runKindAgent, nil)
	if res == nil {
		if err == nil {
			err = errors.New("the run did not start")
		}
		return err
	}
	if err != nil {
		s.log.Error("agent run: host error", "agent", d.Name, "run_id", res.RunID, "err", err)
	}
	return c.JSON(http.StatusOK, s.agents.Report(d.Name, res))
}
