package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

const pageListLimit = 200

// pageChains is the chain list.
func (s *Server) pageChains(c echo.Context) error {
	q := strings.TrimSpace(c.QueryParam("q"))
	rows, total, err := s.db.ListChains(c.Request().Context(), store.ChainFilter{Query: q, Limit: pageListLimit})
	if err != nil {
		return err
	}
	return renderPage(c, http.StatusOK, views.ChainsPage(rows, total, q, s.pageTemplates()))
}

// fragChainRows is the search-as-you-type fragment: the table body.
func (s *Server) fragChainRows(c echo.Context) error {
	q := strings.TrimSpace(c.QueryParam("q"))
	rows, total, err := s.db.ListChains(c.Request().Context(), store.ChainFilter{Query: q, Limit: pageListLimit})
	if err != nil {
		return err
	}
	return renderPage(c, http.StatusOK, views.ChainRows(rows, total, q))
}

// pageNewChain creates an empty chain with the name the person typed and
// opens it. A name that is empty, too long, reserved or taken is refused
// inline and nothing is created.
func (s *Server) pageNewChain(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	if tmpl := c.FormValue("template"); tmpl != "" {
		return s.pageNewFromTemplate(c, tmpl, name)
	}
	if err := checkName(name); err != nil {
		msg := err.Error()
		switch {
		case name == "":
			msg = "Give the chain a name."
		case len(name) > maxNameBytes:
			msg = fmt.Sprintf("That name is %d bytes long; the limit is %d.", len(name), maxNameBytes)
		}
		return renderPage(c, http.StatusOK, views.NameError(msg))
	}
	ch, err := s.db.CreateChain(c.Request().Context(), &engine.Chain{Name: name, Nodes: []engine.Node{}}, "created in the designer")
	if errors.Is(err, store.ErrNameTaken) {
		return renderPage(c, http.StatusOK, views.NameError(fmt.Sprintf("A chain named “%s” already exists; choose another name.", name)))
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
func (s *Server) pageNewFromTemplate(c echo.Context, tmpl, name string) error {
	ch, err := s.chainFromTemplate(c, tmpl, name)
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Code == "name_taken":
		return renderPage(c, http.StatusOK, views.NameError(fmt.Sprintf("A chain named “%s” already exists; choose another name, or leave it empty to use the template's.", name)))
	case errors.As(err, &ae) && (ae.Code == "name_too_long" || ae.Code == "reserved_name"):
		return renderPage(c, http.StatusOK, views.NameError(ae.Message))
	case errors.As(err, &ae) && ae.Code == "not_found":
		return renderPage(c, http.StatusNotFound, views.FormError("No chain was created",
			fmt.Sprintf("This studio has no template %q; reload the page to see the ones it has.", tmpl)))
	case err != nil:
		return s.formError(c, "No chain was created", err)
	}
	return pageRedirect(c, "/chains/"+ch.ID)
}

// pageImport decodes an uploaded or pasted chain (studio or A2E) and saves
// it the way POST /v1/chains/import does (a taken name becomes "name (2)").
// A document that does not decode is not saved; every problem found in it
// is listed.
func (s *Server) pageImport(c echo.Context) error {
	var data []byte
	if fh, err := c.FormFile("file"); err == nil && fh.Size > 0 {
		f, err := fh.Open()
		if err != nil {
			return s.formRefusal(c, "Could not read the file", EBADREQUEST, "bad_body", err.Error())
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, s.cfg.BodyLimit))
		if err != nil {
			return s.formRefusal(c, "Could not read the file", EBADREQUEST, "bad_body", err.Error())
		}
	} else {
		data = []byte(c.FormValue("json"))
	}
	if strings.TrimSpace(string(data)) == "" {
		return s.formRefusal(c, "Nothing to import", EBADREQUEST, engine.CodeDecode, "choose a JSON file or paste a chain document")
	}
	doc, req, err := engine.DecodeDocument(data, s.cfg.Limits)
	if err != nil {
		problems := decodeProblems(data, s.cfg.Limits)
		out := make([]views.ImportProblem, len(problems))
		for i, p := range problems {
			out[i] = views.ImportProblem{Path: p.Path, Line: p.Line, Column: p.Column, Message: p.Message}
		}
		return renderPage(c, http.StatusOK, views.ImportProblems(out))
	}
	if strings.TrimSpace(doc.Name) == "" {
		doc.Name = "imported"
	}
	ch, err := s.importDoc(c, doc, req, "")
	if err != nil {
		return s.formError(c, "Not imported; nothing was saved", err)
	}
	return pageRedirect(c, "/chains/"+ch.ID)
}

// pageDeleteChain soft-deletes a chain; the row disappears.
func (s *Server) pageDeleteChain(c echo.Context) error {
	if err := s.db.DeleteChain(c.Request().Context(), pageParam(c, "id"), 0); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	s.mcp.exposureChanged(c.Request().Context())
	return c.HTML(http.StatusOK, "")
}
