package pages

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

const pageListLimit = 200

// PageChains is the chain list.
func (s *Chains) PageChains(c echo.Context) error {
	q := strings.TrimSpace(c.QueryParam("q"))
	rows, total, err := s.DB.ListChains(c.Request().Context(), store.ChainFilter{Query: q, Limit: pageListLimit})
	if err != nil {
		return err
	}
	return RenderPage(c, http.StatusOK, views.ChainsPage(rows, total, q, s.pageTemplates()))
}

// FragChainRows is the search-as-you-type fragment: the table body.
func (s *Chains) FragChainRows(c echo.Context) error {
	q := strings.TrimSpace(c.QueryParam("q"))
	rows, total, err := s.DB.ListChains(c.Request().Context(), store.ChainFilter{Query: q, Limit: pageListLimit})
	if err != nil {
		return err
	}
	return RenderPage(c, http.StatusOK, views.ChainRows(rows, total, q))
}

// PageNewChain creates an empty chain with the name the person typed and
// opens it. A name that is empty, too long, reserved or taken is refused
// inline and nothing is created.
func (s *Chains) PageNewChain(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	if tmpl := c.FormValue("template"); tmpl != "" {
		return s.pageNewFromTemplate(c, tmpl, name)
	}
	if err := ops.CheckName(name); err != nil {
		msg := err.Error()
		switch {
		case name == "":
			msg = "Give the chain a name."
		case len(name) > ops.MaxNameBytes:
			msg = fmt.Sprintf("That name is %d bytes long; the limit is %d.", len(name), ops.MaxNameBytes)
		}
		return RenderPage(c, http.StatusOK, views.NameError(msg))
	}
	ch, err := s.DB.CreateChain(c.Request().Context(), &chain.Chain{Name: name, Nodes: []chain.Node{}}, "created in the designer", false)
	if errors.Is(err, store.ErrNameTaken) {
		return RenderPage(c, http.StatusOK, views.NameError(fmt.Sprintf("A chain named “%s” already exists; choose another name.", name)))
	}
	if err != nil {
		return err
	}
	return pageRedirect(c, "/chains/"+ch.ID)
}

// pageNewFromTemplate creates a chain from a template (named name, or
// the template's name made unique) and opens it. A refused name is said
// as the blank chain's is; a template this studio does not have (a page
// left open across an upgrade, a hand-made request) is a 404 whose
// message the dialog shows, and not a mark on the name field.
func (s *Chains) pageNewFromTemplate(c echo.Context, tmpl, name string) error {
	ch, err := s.ChainFromTemplate(c, tmpl, name)
	var ae *httpcore.APIError
	switch {
	case errors.As(err, &ae) && ae.Code == "name_taken":
		return RenderPage(c, http.StatusOK, views.NameError(fmt.Sprintf("A chain named “%s” already exists; choose another name, or leave it empty to use the template's.", name)))
	case errors.As(err, &ae) && (ae.Code == "name_too_long" || ae.Code == "reserved_name"):
		return RenderPage(c, http.StatusOK, views.NameError(ae.Message))
	case errors.As(err, &ae) && ae.Code == "not_found":
		return RenderPage(c, http.StatusNotFound, views.FormError("No chain was created",
			fmt.Sprintf("This studio has no template %q; reload the page to see the ones it has.", tmpl)))
	case err != nil:
		return s.formError(c, "No chain was created", err)
	}
	return pageRedirect(c, "/chains/"+ch.ID)
}

// PageImport decodes an uploaded or pasted chain (studio or A2E) and saves
// it the way POST /v1/chains/import does (a taken name becomes "name (2)").
// A document that does not decode is not saved; every problem found in it
// is listed.
func (s *Chains) PageImport(c echo.Context) error {
	var data []byte
	if fh, err := c.FormFile("file"); err == nil && fh.Size > 0 {
		f, err := fh.Open()
		if err != nil {
			return s.formRefusal(c, "Could not read the file", httpcore.EBADREQUEST, "bad_body", err.Error())
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, s.BodyLimit))
		if err != nil {
			return s.formRefusal(c, "Could not read the file", httpcore.EBADREQUEST, "bad_body", err.Error())
		}
	} else {
		data = []byte(c.FormValue("json"))
	}
	if strings.TrimSpace(string(data)) == "" {
		return s.formRefusal(c, "Nothing to import", httpcore.EBADREQUEST, chain.CodeDecode, "choose a JSON file or paste a chain document")
	}
	doc, req, err := chain.DecodeDocument(data, s.Limits)
	if err != nil {
		problems := ops.DecodeProblems(data, s.Limits)
		out := make([]views.ImportProblem, len(problems))
		for i, p := range problems {
			out[i] = views.ImportProblem{Path: p.Path, Line: p.Line, Column: p.Column, Message: p.Message}
		}
		return RenderPage(c, http.StatusOK, views.ImportProblems(out))
	}
	if strings.TrimSpace(doc.Name) == "" {
		doc.Name = "imported"
	}
	ch, err := s.ImportDoc(c, doc, req, "")
	if err != nil {
		return s.formError(c, "Not imported; nothing was saved", err)
	}
	return pageRedirect(c, "/chains/"+ch.ID)
}

// PageDeleteChain soft-deletes a chain; the row disappears.
func (s *Chains) PageDeleteChain(c echo.Context) error {
	if err := s.DeleteChain(c.Request().Context(), ops.PageParam(c, "id"), 0); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return c.HTML(http.StatusOK, "")
}
