package pages

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// PageEditor is the designer for one chain.
func (s *Chains) PageEditor(c echo.Context) error {
	ch, err := s.DB.GetChain(c.Request().Context(), ops.PageParam(c, "id"))
	if err != nil {
		return ops.PageNotFound(err, "chain")
	}
	return RenderPage(c, http.StatusOK, views.EditorPage(ch, chain.ValidateWith(ch.Doc, s.ValidateOptions(c))))
}

// Save states the editor reads from the X-Save-State header.
const (
	editorSaveSaved     = "saved"    // a new version was written (X-Chain-Version)
	editorSaveInvalid   = "invalid"  // the document does not decode; nothing written
	editorSaveConflict  = "conflict" // another tab saved first (X-Chain-Version: the current one)
	editorSaveNameTaken = "name_taken"
	// the patch does not apply to the saved version (it was made against
	// another copy, or is malformed): nothing written, send the whole document
	editorSavePatchRefused = "patch_refused"
)

// editorSaveRequest is the whole document (doc) or, for a large chain, a
// patch of what changed since base_version (chain.Patch).
type editorSaveRequest struct {
	BaseVersion int             `json:"base_version"`
	Doc         json.RawMessage `json:"doc"`
	Patch       json.RawMessage `json:"patch"`
	Message     string          `json:"message"`
}

// PageSave is the editor's auto-save: it stores the document as a New
// version (optimistic concurrency on base_version) and answers with the
// validation panel. Headers: X-Save-State, X-Chain-Version, X-Issue-Errors.
func (s *Chains) PageSave(c echo.Context) error {
	ctx := c.Request().Context()
	id := ops.PageParam(c, "id")
	timing := serverTiming{start: time.Now()}
	var req editorSaveRequest
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	if err := json.Unmarshal(body, &req); err != nil || (len(req.Doc) == 0) == (len(req.Patch) == 0) {
		h.Set("X-Save-State", editorSaveInvalid)
		msg := "the request is not {base_version, doc} or {base_version, patch}"
		if err != nil {
			msg += ": " + err.Error()
		}
		return RenderPage(c, http.StatusOK, views.Issues(nil, msg))
	}
	var doc *chain.Chain
	if len(req.Patch) > 0 {
		doc, err = s.PatchedDoc(ctx, id, req.BaseVersion, req.Patch)
		var vc *store.VersionConflictError
		var de *chain.DecodeError
		switch {
		case errors.As(err, &vc):
			return saveConflict(c, vc)
		case errors.As(err, &de):
			h.Set("X-Save-State", editorSavePatchRefused)
			return RenderPage(c, http.StatusOK, views.Issues(nil, "the change could not be applied: "+de.Error()))
		case err != nil:
			return ops.PageNotFound(err, "chain")
		}
	} else if doc, err = chain.Decode(req.Doc, s.Limits); err != nil {
		h.Set("X-Save-State", editorSaveInvalid)
		return RenderPage(c, http.StatusOK, views.Issues(nil, err.Error()))
	}
	if err := ops.CheckName(doc.Name); err != nil {
		h.Set("X-Save-State", editorSaveInvalid)
		return RenderPage(c, http.StatusOK, views.Issues(nil, "not saved: "+err.Error()))
	}
	timing.mark("decode")
	msg := req.Message
	if msg == "" {
		msg = "edited in the designer"
	}
	ch, err := s.DB.SaveChainAs(ctx, id, req.BaseVersion, doc, msg, store.VersionAutosave)
	var vc *store.VersionConflictError
	switch {
	case errors.As(err, &vc):
		return saveConflict(c, vc)
	case errors.Is(err, store.ErrNameTaken):
		h.Set("X-Save-State", editorSaveNameTaken)
		h.Set("X-Chain-Version", strconv.Itoa(req.BaseVersion))
		return RenderPage(c, http.StatusOK, views.FormError("Not saved: name taken",
			fmt.Sprintf("another chain is named %q; choose another name", doc.Name)))
	case err != nil:
		return ops.PageNotFound(err, "chain")
	}
	timing.mark("store")
	issues := chain.ValidateWith(doc, s.ValidateOptions(c))
	timing.mark("validate")
	errs := 0
	for _, is := range issues {
		if is.Severity == chain.SeverityError {
			errs++
		}
	}
	h.Set("X-Save-State", editorSaveSaved)
	h.Set("X-Chain-Version", strconv.Itoa(ch.Version))
	h.Set("X-Issue-Errors", strconv.Itoa(errs))
	h.Set("Server-Timing", timing.String())
	return RenderPage(c, http.StatusOK, views.Issues(issues, ""))
}

// serverTiming collects the steps of a request for the Server-Timing
// header, so the browser (and its developer tools) can see where a save's
// time went on the server.
type serverTiming struct {
	start time.Time
	last  time.Time
	steps []string
}

func (t *serverTiming) mark(name string) {
	now := time.Now()
	if t.last.IsZero() {
		t.last = t.start
	}
	t.steps = append(t.steps, fmt.Sprintf("%s;dur=%.1f", name, float64(now.Sub(t.last).Microseconds())/1000))
	t.last = now
}

func (t *serverTiming) String() string { return strings.Join(t.steps, ", ") }

func saveConflict(c echo.Context, vc *store.VersionConflictError) error {
	h := c.Response().Header()
	h.Set("X-Save-State", editorSaveConflict)
	h.Set("X-Chain-Version", strconv.Itoa(vc.Current))
	return RenderPage(c, http.StatusOK, views.FormError("Not saved: another tab saved first",
		fmt.Sprintf("this page edits version %d but the chain is at version %d", vc.Base, vc.Current)))
}

// PageStartRun checks the input and starts a run of the saved chain.
func (s *Chains) PageStartRun(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.DB.GetChain(ctx, ops.PageParam(c, "id"))
	if err != nil {
		return ops.PageNotFound(err, "chain")
	}
	if err := s.DraftGate(c, ch); err != nil {
		return s.formError(c, "Cannot run", err)
	}
	input := map[string]any{}
	if raw := strings.TrimSpace(c.FormValue("input")); raw != "" {
		if err := json.Unmarshal([]byte(raw), &input); err != nil {
			return s.formRefusal(c, "The input is not a JSON object", httpcore.EBADREQUEST, "bad_json", err.Error())
		}
	}
	// The designer runs its draft with the pinned outputs (chain.PinIssues
	// refuse it while a pin is stale, as any validation error would).
	runID, err := s.Runs.StartWithPins(ctx, ch, input)
	var invalid *runs.InvalidChainError
	if errors.As(err, &invalid) {
		var lines []string
		for _, is := range invalid.Issues {
			if is.Severity == chain.SeverityError {
				lines = append(lines, is.String())
			}
		}
		return s.formRefusal(c, "The chain has errors; fix them before running", httpcore.EINVALID, chain.CodeInvalid, strings.Join(lines, "\n"))
	}
	if err != nil {
		return s.formError(c, "Could not start the run", err)
	}
	return pageRedirect(c, "/runs/"+runID)
}

type editorPropsRequest struct {
	Node       *chain.Node  `json:"node"`
	Edge       *chain.Edge  `json:"edge"`
	Chain      *chain.Chain `json:"chain"`
	NodeIDs    []string     `json:"node_ids"`
	SourceKind chain.Kind   `json:"source_kind"`
	Handles    []string     `json:"handles"`
	// Doc is the rest of the chain a node's "what it will receive" needs
	// (the node's incoming edges, the nodes that may own it).
	Doc *chain.Chain `json:"doc"`
}

// toolOptions are the tools a tool node can call, each with its description
// and input schema (GET /v1/tools' catalogue).
func (s *Chains) pageToolOptions() []views.ToolOption {
	cat := s.ToolCatalog()
	out := make([]views.ToolOption, 0, len(cat))
	for _, t := range cat {
		help := t.Description
		if !t.Enabled {
			help += " (not enabled on this studio)"
		}
		out = append(out, views.ToolOption{Name: t.Name, Help: help, Schema: views.SchemaJSON(t.InputSchema)})
	}
	return out
}

// agentOptions are the agents an agent node can run, with their input schemas.
func (s *Chains) pageAgentOptions() []views.ToolOption {
	list := s.AgentTools()
	out := make([]views.ToolOption, 0, len(list))
	for _, a := range list {
		out = append(out, views.ToolOption{Name: a.Name, Help: a.Description, Schema: views.SchemaJSON(a.InputSchema)})
	}
	return out
}

// FragProps renders the property panel of the posted node, edge or chain.
func (s *Chains) FragProps(c echo.Context) error {
	var req editorPropsRequest
	if err := json.NewDecoder(c.Request().Body).Decode(&req); err != nil {
		return s.formRefusal(c, "Cannot show properties", httpcore.EBADREQUEST, "bad_json", err.Error())
	}
	pc := views.PropsCtx{NodeIDs: req.NodeIDs, SourceKind: req.SourceKind, Handles: req.Handles}
	switch {
	case req.Node != nil:
		switch req.Node.Kind {
		case chain.KindTool:
			pc.Tools = s.pageToolOptions()
		case chain.KindProc:
			for _, t := range s.ToolCatalog() {
				if t.Name == "proc" {
					pc.ProcConfig = views.SchemaJSON(t.InputSchema)
				}
			}
		case chain.KindInterrupt:
			pc.InterruptConfig = views.SchemaJSON(chain.InterruptConfigSchema())
		case chain.KindAgent:
			pc.Agents = s.pageAgentOptions()
			pc.AgentConfig = views.SchemaJSON(agent.ConfigSchema())
			if _, names := req.Node.Config["agent"].(string); req.Node.Name == "" && !names {
				// no agent named: the node defines its own, drawn as a form
				pc.AgentConfig = views.SchemaJSON(agent.DefinedConfigSchema(s.Providers))
				pc.AgentDefined = true
			}
		case chain.KindSkill:
			rows, _, err := s.DB.ListChains(c.Request().Context(), store.ChainFilter{Limit: 1000})
			if err != nil {
				return err
			}
			for _, r := range rows {
				pc.Chains = append(pc.Chains, r.Name)
			}
		}
		if req.Doc != nil {
			pc.Receives = describeInput(req.Doc, *req.Node, s.Registry)
		}
		return RenderPage(c, http.StatusOK, views.NodeProps(*req.Node, pc))
	case req.Edge != nil:
		return RenderPage(c, http.StatusOK, views.EdgeProps(*req.Edge, pc))
	case req.Chain != nil:
		pc.BudgetToday = s.chainBudgetToday(req.Chain.Name)
		return RenderPage(c, http.StatusOK, views.ChainProps(*req.Chain, pc))
	}
	return s.formRefusal(c, "Cannot show properties", httpcore.EBADREQUEST, "bad_json", "post {node}, {edge} or {chain}")
}

// chainBudgetToday says where the chain's day budget stands now, for its
// panel ("": no account yet).
func (s *Chains) chainBudgetToday(name string) string {
	if s.Runs == nil {
		return ""
	}
	_, days := s.Runs.RunBudgets(name, "", nil)
	for _, d := range ops.BudgetsNow(runs.Budgets{}, days).Accounts {
		if d.Scope != runs.ScopeChain {
			continue
		}
		var parts []string
		if d.Limit.Tokens > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d tokens", d.SpentTokens, d.Limit.Tokens))
		}
		if d.Limit.Cost != nil {
			parts = append(parts, fmt.Sprintf("%.4f of %.4f", d.SpentCost, *d.Limit.Cost))
		}
		return "Today: " + strings.Join(parts, ", ") + " spent (all runs; resets at 00:00 UTC)."
	}
	return ""
}

// FragExpr checks one expression as it is typed. With the field named
// (chain, node or edge, field: the designer's fields send them) it also
// shows what the validator says about the field holding src, on the saved
// chain, so the field and the Validation panel agree (a bare-word
// comparison is a warning in both, not a green check under the field).
func (s *Chains) FragExpr(c echo.Context) error {
	src := c.FormValue("src")
	var issues []chain.Issue
	id, field := c.FormValue("chain"), c.FormValue("field")
	if id != "" && field != "" && strings.TrimSpace(src) != "" && len(src) <= expr.DefaultLimits.MaxLength {
		ch, err := s.DB.GetChain(c.Request().Context(), id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// not saved yet (or deleted): the expression's own verdict only
		case err != nil:
			return err
		default:
			issues = chain.FieldIssues(ch.Doc, c.FormValue("node"), c.FormValue("edge"), field, src, s.Runs.FieldOptions())
		}
	}
	return RenderPage(c, http.StatusOK, views.ExprCheck(src, false, issues))
}

// describeInput says what the edited node will receive, by the engine's rule,
// with the node as it is being edited.
func describeInput(doc *chain.Chain, n chain.Node, reg *engine.Registry) *engine.InputDescription {
	c := *doc
	c.Nodes = append([]chain.Node(nil), doc.Nodes...)
	found := false
	for i := range c.Nodes {
		if c.Nodes[i].ID == n.ID {
			c.Nodes[i], found = n, true
		}
	}
	if !found {
		c.Nodes = append(c.Nodes, n)
	}
	d, _ := engine.DescribeInput(&c, n.ID, reg)
	return d
}
