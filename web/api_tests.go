package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// testSessionTimeout bounds one request's test session (each test is also
// bounded by chaintest.DefaultTimeout); tests past it end timed_out.
const testSessionTimeout = 60 * time.Second

// testsReport is POST /v1/chains/{id}/tests/run's answer.
type testsReport struct {
	ChainID string `json:"chain_id"`
	Version int    `json:"version"`
	*chaintest.Report
}

// POST /v1/chains/{id}/tests/run {name?}: runs the current version's tests.
func (s *Server) runChainTests(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	ch, err := s.DB.GetChain(c.Request().Context(), c.Param("id"))
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	if err := s.DraftGate(c, ch); err != nil {
		return err
	}
	rep, err := s.chainTests(c.Request().Context(), ch.Doc, body.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, testsReport{ChainID: ch.ID, Version: ch.Version, Report: rep})
}

// chainTests runs a document's tests (one by name, or all) with the
// studio's pure tools.
func (s *Server) chainTests(ctx context.Context, doc *chain.Chain, only string) (*chaintest.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, testSessionTimeout)
	defer cancel()
	rep, err := chaintest.Run(ctx, doc, chaintest.Options{Registry: s.Registry, Limits: s.Limits, Only: only})
	if errors.Is(err, chaintest.ErrNoTest) {
		return nil, httpcore.Error(httpcore.ENOTFOUND, "test_not_found", fmt.Sprintf("the chain has no test named %q", only), map[string]any{"path": "name", "name": only})
	}
	return rep, err
}

// maxTestNameBytes bounds a test's name given to save-test (the engine
// refuses longer ones on decode).
const maxTestNameBytes = 256

// POST /v1/runs/{id}/save-test {name}: the run becomes a test of its chain,
// saved as a new version of the chain's current document.
func (s *Server) saveRunAsTest(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	run, err := s.DB.GetRun(ctx, id)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
	}
	if run.ChainID == "" {
		return httpcore.Error(httpcore.EINVALID, "no_chain", "the run is of no saved chain (an ad-hoc or A2E run): there is no chain to keep the test in", nil)
	}
	if !run.Status.Terminal() || run.Status == chain.StatusPaused {
		return httpcore.Error(httpcore.ECONFLICT, "run_not_finished", fmt.Sprintf("the run is %s: save it as a test once it has finished", run.Status), map[string]any{"status": run.Status})
	}
	name := strings.TrimSpace(body.Name)
	if name == "" {
		name = "run " + runPrefix(run.ID)
	}
	if len(name) > maxTestNameBytes {
		return httpcore.Error(httpcore.EINVALID, "name_too_long", fmt.Sprintf("the test name is %d bytes, over the limit of %d", len(name), maxTestNameBytes), map[string]any{"path": "name"})
	}
	ch, err := s.DB.GetChain(ctx, run.ChainID)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", run.ChainID))
	}
	doc := ch.Doc.Clone()
	for _, t := range doc.Tests {
		if t.Name == name {
			return httpcore.Error(httpcore.ECONFLICT, "test_name_taken", fmt.Sprintf("the chain already has a test named %q; choose another name", name), map[string]any{"path": "name", "name": name})
		}
	}
	if len(doc.Tests) >= chain.MaxTests {
		return httpcore.Error(httpcore.EINVALID, "too_many_tests", fmt.Sprintf("the chain already has %d tests, the limit", len(doc.Tests)), nil)
	}
	test, err := chaintest.FromRun(doc, s.Registry, name, chaintest.Recorded{Input: run.Input, Status: run.Status, FinalOutput: run.FinalOutput, Nodes: run.Nodes})
	if err != nil {
		return httpcore.Error(httpcore.EINVALID, "run_not_testable", err.Error(), nil)
	}
	doc.Tests = append(doc.Tests, test)
	saved, err := s.DB.SaveChainAs(ctx, ch.ID, ch.Version, doc, fmt.Sprintf("test %q saved from run %s", name, runPrefix(run.ID)), store.VersionSave)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", ch.ID))
	}
	index := len(doc.Tests) - 1
	editor := fmt.Sprintf("/chains/%s?test=%d", url.PathEscape(saved.ID), index)
	c.Response().Header().Set(echo.HeaderLocation, "/v1/chains/"+url.PathEscape(saved.ID))
	return c.JSON(http.StatusCreated, map[string]any{
		"chain_id": saved.ID, "version": saved.Version, "test": test, "index": index, "editor_url": editor,
	})
}

func runPrefix(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
