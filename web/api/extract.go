package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/edit"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// maxExtractNodes bounds the selection of one extract request.
const maxExtractNodes = 10000

// extractBody is POST /v1/chains/{id}/extract's body. Doc is the editor's
// current document (it may hold unsaved edits); without it the saved
// document is used.
type extractBody struct {
	Nodes []string        `json:"nodes"`
	Name  string          `json:"name"`
	Doc   json.RawMessage `json:"doc"`
}

// POST /v1/chains/{id}/extract: moves the selected nodes into a new chain
// (created here) and returns the parent rewritten with one skill node in
// their place, for the editor to apply and save as one edit. The new chain
// is created only when both documents validate, so a refusal writes nothing.
func (s *Chains) ExtractChain(c echo.Context) error {
	ctx := c.Request().Context()
	var body extractBody
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	if len(body.Nodes) > maxExtractNodes {
		return httpcore.Error(httpcore.EBADREQUEST, "too_many_nodes", fmt.Sprintf("nodes: at most %d, got %d", maxExtractNodes, len(body.Nodes)), nil)
	}
	ch, err := s.DB.GetChain(ctx, c.Param("id"))
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	doc := ch.Doc
	if len(body.Doc) > 0 && string(body.Doc) != "null" {
		if doc, _, err = s.decodeDocumentBytes(body.Doc); err != nil {
			return err
		}
	}
	if err := ops.CheckName(body.Name); err != nil {
		return err
	}
	if _, err := s.DB.GetChainByName(ctx, body.Name); err == nil {
		return httpcore.Error(httpcore.ECONFLICT, "name_taken", fmt.Sprintf("a chain named %q already exists; chain names are unique", body.Name), map[string]any{"name": body.Name})
	}
	parent, sub, err := edit.Extract(doc, body.Nodes, body.Name)
	if err != nil {
		return err
	}
	opts := s.ValidateOptions(c)
	if issues := chain.ValidateWith(sub, opts); chain.HasErrors(issues) {
		return extractInvalid("the new chain", issues)
	}
	resolve := opts.Resolve
	opts.Resolve = func(name string) (*chain.Chain, bool) {
		if name == sub.Name {
			return sub, true
		}
		return resolve(name)
	}
	if issues := chain.ValidateWith(parent, opts); chain.HasErrors(issues) {
		return extractInvalid("this chain after the extract", issues)
	}
	created, err := s.DB.CreateChain(ctx, sub, fmt.Sprintf("extracted from %q", doc.Name), true)
	if err != nil {
		return httpcore.StoreErr(err, "chain")
	}
	return c.JSON(http.StatusCreated, map[string]any{
		"parent": parent,
		"chain":  s.chainAnswer(c, created),
	})
}

// extractInvalid names the first validation error that stops an extract.
func extractInvalid(which string, issues []chain.Issue) error {
	for _, is := range issues {
		if is.Severity == chain.SeverityError {
			return httpcore.Error(httpcore.EINVALID, "extract_refused", fmt.Sprintf("extract: %s would not validate: %s", which, is.Message),
				map[string]any{"node_id": is.NodeID, "edge_id": is.EdgeID, "field": is.Field, "issues": issues})
		}
	}
	return nil
}
