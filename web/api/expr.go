package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/exprhelp"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

const (
	ExprBodyLimit  = 64 << 10 // a preview request: an expression and a few ids
	exprRunsCached = 4        // finished runs kept decoded (they never change)
)

// exprCached is one run's data kept for previews.
type exprCached struct {
	key     string // the run's id, or "test:" + the chain's id for its test's data
	version int    // the chain version a test's data ran on
	data    *exprhelp.RunData
}

// exprRunCache keeps the last few finished runs decoded: a preview is
// evaluated on every keystroke and reading a run folds its whole log.
type exprRunCache struct {
	mu   sync.Mutex
	runs []*exprCached // most recent use last
}

func (c *exprRunCache) get(key string) *exprCached {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.runs {
		if e.key == key {
			c.runs = append(append(c.runs[:i:i], c.runs[i+1:]...), e)
			return e
		}
	}
	return nil
}

func (c *exprRunCache) put(e *exprCached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, o := range c.runs {
		if o.key == e.key { // a chain's test data: the newer replaces it
			c.runs = append(c.runs[:i:i], c.runs[i+1:]...)
			break
		}
	}
	c.runs = append(c.runs, e)
	if len(c.runs) > exprRunsCached {
		c.runs = c.runs[len(c.runs)-exprRunsCached:]
	}
}

func finished(s chain.RunStatus) bool {
	return s != chain.StatusRunning && s != chain.StatusQueued && s != chain.StatusPaused
}

// lastRunData is the chain's latest run's data, or nil when it never ran;
// withhold: with its credentialed calls' outputs withheld (withheld.go),
// cached apart.
func (s *Chains) lastRunData(ctx context.Context, chainID, runID string, withhold bool) (*exprhelp.RunData, error) {
	cacheKey := func(id string) string {
		if withhold {
			return id + "\x00withheld"
		}
		return id
	}
	if runID == "" {
		rs, _, err := s.DB.ListRuns(ctx, store.RunFilter{ChainID: chainID, Limit: 1, Brief: true})
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, nil
		}
		runID = rs[0].ID
		if e := s.exprRuns.get(cacheKey(runID)); e != nil && finished(rs[0].Status) {
			return e.data, nil
		}
	} else if e := s.exprRuns.get(cacheKey(runID)); e != nil {
		return e.data, nil
	}
	r, err := s.DB.GetRun(ctx, runID)
	if err != nil {
		return nil, httpcore.StoreErr(err, fmt.Sprintf("run %q", runID))
	}
	if r.ChainID != chainID {
		return nil, httpcore.Error(httpcore.EINVALID, "wrong_run", fmt.Sprintf("run %s is not a run of chain %q", runID, chainID), map[string]any{"path": "run_id"})
	}
	if withhold {
		r = ops.WithheldRun(r)
	}
	d := exprhelp.FromRun(r.ID, r.Status, r.Input, r.Nodes)
	if finished(r.Status) {
		s.exprRuns.put(&exprCached{key: cacheKey(r.ID), data: d})
	}
	return d, nil
}

// exprData is the latest run's data, or, when the chain never ran, the data
// of its first test's in-memory run (its input and mocks), or nil.
// A test's data is kept per chain, with the version it ran on: while an
// expression is being typed the saved version often does not validate (a
// half-written expression), and the engine runs no invalid chain, so the
// last version whose test ran is what the preview reads meanwhile.
//
// A preview passes the expression being typed (typed, src): the test runs on
// the chain with that expression in its field, as it will be once saved.
func (s *Chains) exprData(ctx context.Context, ch *store.Chain, runID string, typed *exprTarget, src string, withhold bool) (*exprhelp.RunData, error) {
	d, err := s.lastRunData(ctx, ch.ID, runID, withhold)
	if d != nil || err != nil || runID != "" || len(ch.Doc.Tests) == 0 {
		return d, err
	}
	key := "test:" + ch.ID
	last := s.exprRuns.get(key)
	if last != nil && last.version == ch.Version {
		return last.data, nil
	}
	doc := ch.Doc
	if typed != nil {
		doc, _ = chain.WithExpr(doc, typed.Node, typed.Edge, typed.Field, src)
	}
	if d, err := exprhelp.FromTest(ctx, doc, chaintest.Options{Registry: s.Registry, Limits: s.Limits}); err == nil {
		s.exprRuns.put(&exprCached{key: key, version: ch.Version, data: d})
		return d, nil
	}
	// The test did not run: older data, or none (the preview's "not run
	// yet" case).
	if last != nil {
		return last.data, nil
	}
	return nil, nil
}

// describeData fills a context or preview answer's run_id / test / note.
func describeData(out map[string]any, d *exprhelp.RunData) {
	if note := exprhelp.Note(d); note != "" {
		out["note"] = note
	}
	switch {
	case d == nil:
	case d.Test != "":
		out["test"] = d.Test
	default:
		out["run_id"] = d.RunID
	}
}

// exprTarget reads which field is meant: node (or edge) and field.
type exprTarget struct {
	Node  string `json:"node"`
	Edge  string `json:"edge"`
	Field string `json:"field"`
	RunID string `json:"run_id"`
}

func (s *Chains) exprField(ch *store.Chain, t exprTarget) (*chain.ExprField, error) {
	if t.Field == "" {
		return nil, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", "field is required (condition, items_path, cases[N].when, input_map.KEY or set_state.KEY)", map[string]any{"path": "field"})
	}
	if (t.Node == "") == (t.Edge == "") {
		return nil, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", "name exactly one of node and edge", map[string]any{"path": "node"})
	}
	if t.Node != "" && ch.Doc.Node(t.Node) == nil {
		return nil, httpcore.Error(httpcore.ENOTFOUND, "not_found", fmt.Sprintf("node %q is not in chain %q", t.Node, ch.ID), map[string]any{"node_id": t.Node})
	}
	f, err := chain.ExprFieldContext(ch.Doc, t.Node, t.Edge, t.Field)
	if err != nil {
		return nil, httpcore.Error(httpcore.EINVALID, "bad_field", err.Error(), map[string]any{"path": "field", "node_id": t.Node, "edge_id": t.Edge})
	}
	return f, nil
}

// GET /v1/chains/{id}/expr/context?node=&edge=&field=&run_id=
func (s *Chains) ExprContext(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.DB.GetChain(ctx, c.Param("id"))
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	t := exprTarget{Node: c.QueryParam("node"), Edge: c.QueryParam("edge"), Field: c.QueryParam("field"), RunID: c.QueryParam("run_id")}
	f, err := s.exprField(ch, t)
	if err != nil {
		return err
	}
	d, err := s.exprData(ctx, ch, t.RunID, nil, "", !s.SeesCredentialed(c))
	if err != nil {
		return err
	}
	out := map[string]any{
		"names": exprhelp.Names(f), "upstream": orEmpty(f.Upstream), "output_of": f.OutputOf, "from": orEmpty(f.From),
		"functions": expr.Functions(), "run_id": "",
	}
	describeData(out, d)
	out["shapes"], out["schema_shapes"] = exprhelp.Shapes(ch.Doc, s.Registry, f, d)
	return c.JSON(http.StatusOK, out)
}

// exprPreviewRequest is the body of POST /v1/chains/{id}/expr/preview.
type exprPreviewRequest struct {
	exprTarget
	Expr string `json:"expr"`
}

// POST /v1/chains/{id}/expr/preview {node|edge, field, expr, run_id?}
func (s *Chains) ExprPreview(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, ExprBodyLimit+1))
	if err != nil {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_body", "could not read the request body: "+err.Error(), nil)
	}
	if len(body) > ExprBodyLimit {
		return httpcore.Error(httpcore.ETOOLARGE, "too_large", fmt.Sprintf("a preview request is at most %d bytes", ExprBodyLimit), nil)
	}
	var req exprPreviewRequest
	if err := httpcore.BindJSONBytes(body, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Expr) == "" {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", "expr is required", map[string]any{"path": "expr"})
	}
	if len(req.Expr) > expr.DefaultLimits.MaxLength {
		return httpcore.Error(httpcore.ETOOLARGE, "too_large", fmt.Sprintf("expr is %d bytes; an expression is at most %d", len(req.Expr), expr.DefaultLimits.MaxLength), map[string]any{"path": "expr"})
	}
	ctx := c.Request().Context()
	ch, err := s.DB.GetChain(ctx, c.Param("id"))
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	f, err := s.exprField(ch, req.exprTarget)
	if err != nil {
		return err
	}
	d, err := s.exprData(ctx, ch, req.RunID, &req.exprTarget, req.Expr, !s.SeesCredentialed(c))
	if err != nil {
		return err
	}
	p, err := exprhelp.Evaluate(ctx, ch.Doc, f, d, req.Expr)
	if err != nil {
		return err
	}
	// The expression's own faults are the preview's answer, not a bad
	// request: 200 with "error", as the field's check shows them.
	out := map[string]any{"run_id": ""}
	describeData(out, d)
	if p.Error != nil {
		out["error"] = p.Error
	}
	if p.Warnings != nil {
		out["warnings"], out["fixes"] = p.Warnings, p.Fixes
	}
	if p.Error == nil {
		out["value"], out["type"], out["truncated"] = p.Value, p.Type, p.Truncated
	}
	return c.JSON(http.StatusOK, out)
}

// orEmpty answers a nil list as [] rather than null: clients iterate it.
func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
