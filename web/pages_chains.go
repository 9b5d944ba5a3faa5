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
	return renderPage(c, http.StatusOK, views.ChainsPage(rows, total, q))
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

// uniqueName returns base, or base-2, base-3… whichever no live chain has.
func (s *Server) pageUniqueName(c echo.Context, base string) (string, error) {
	name := base
	for n := 2; n < 10_000; n++ {
		_, err := s.db.GetChainByName(c.Request().Context(), name)
		if errors.Is(err, store.ErrNotFound) {
			return name, nil
		}
		if err != nil {
			return "", err
		}
		name = fmt.Sprintf("%s-%d", base, n)
	}
	return "", fmt.Errorf("no free name for %q", base)
}

// pageNewChain creates an empty chain with a unique name and opens it.
func (s *Server) pageNewChain(c echo.Context) error {
	for attempt := 0; attempt < 5; attempt++ {
		name, err := s.pageUniqueName(c, "untitled")
		if err != nil {
			return err
		}
		ch, err := s.db.CreateChain(c.Request().Context(), &engine.Chain{Name: name, Nodes: []engine.Node{}}, "created in the designer")
		if errors.Is(err, store.ErrNameTaken) {
			continue // another tab took it
		}
		if err != nil {
			return err
		}
		return c.Redirect(http.StatusSeeOther, "/chains/"+ch.ID)
	}
	return apiError(http.StatusConflict, "name_taken", "could not find a free name; try again", nil)
}

// pageImport decodes an uploaded or pasted chain (studio or A2E) and saves
// it; decode errors are shown and nothing is saved.
func (s *Server) pageImport(c echo.Context) error {
	var data []byte
	if fh, err := c.FormFile("file"); err == nil && fh.Size > 0 {
		f, err := fh.Open()
		if err != nil {
			return renderPage(c, http.StatusOK, views.FormError("Could not read the file", err.Error()))
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, s.cfg.BodyLimit))
		if err != nil {
			return renderPage(c, http.StatusOK, views.FormError("Could not read the file", err.Error()))
		}
	} else {
		data = []byte(c.FormValue("json"))
	}
	if strings.TrimSpace(string(data)) == "" {
		return renderPage(c, http.StatusOK, views.FormError("Nothing to import", "choose a JSON file or paste a chain document"))
	}
	doc, err := engine.Decode(data, s.cfg.Limits)
	if err != nil {
		return renderPage(c, http.StatusOK, views.FormError("The document does not decode; nothing was saved", err.Error()))
	}
	if strings.TrimSpace(doc.Name) == "" {
		doc.Name = "imported"
	}
	if err := checkName(doc.Name); err != nil {
		return renderPage(c, http.StatusOK, views.FormError("Name not allowed; nothing was saved", err.Error()))
	}
	ch, err := s.db.CreateChain(c.Request().Context(), doc, "imported")
	if errors.Is(err, store.ErrNameTaken) {
		return renderPage(c, http.StatusOK, views.FormError("Name taken; nothing was saved",
			fmt.Sprintf("a chain named %q already exists: rename it in the document (\"name\") or delete the other chain", doc.Name)))
	}
	if err != nil {
		return renderPage(c, http.StatusOK, views.FormError("Could not save", err.Error()))
	}
	return pageRedirect(c, "/chains/"+ch.ID)
}

// pageDeleteChain soft-deletes a chain; the row disappears.
func (s *Server) pageDeleteChain(c echo.Context) error {
	if err := s.db.DeleteChain(c.Request().Context(), pageParam(c, "id")); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return c.HTML(http.StatusOK, "")
}
