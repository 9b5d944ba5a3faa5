package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// chainTemplate is a decoded Deps.Templates entry.
type chainTemplate struct {
	ID  string
	Doc *engine.Chain
}

// templateInfo is a template in GET /v1/templates and the New chain dialog.
type templateInfo struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Nodes       int    `json:"nodes"`
	Tests       int    `json:"tests"`
}

// decodeTemplates decodes the templates once, at start: a template that
// does not decode is the build's mistake, not a user's.
func decodeTemplates(in []Template, lim engine.Limits) ([]chainTemplate, error) {
	out := make([]chainTemplate, 0, len(in))
	for _, t := range in {
		doc, _, err := engine.DecodeDocument(t.Data, lim)
		if err != nil {
			return nil, fmt.Errorf("web: template %q: %w", t.ID, err)
		}
		out = append(out, chainTemplate{ID: t.ID, Doc: doc})
	}
	return out, nil
}

func (s *Server) templateInfos() []templateInfo {
	out := make([]templateInfo, 0, len(s.tmpls))
	for _, t := range s.tmpls {
		out = append(out, templateInfo{ID: t.ID, Name: t.Doc.Name, Description: t.Doc.Description, Nodes: len(t.Doc.Nodes), Tests: len(t.Doc.Tests)})
	}
	return out
}

// pageTemplates are the templates for the New chain dialog.
func (s *Server) pageTemplates() []views.TemplateOption {
	out := make([]views.TemplateOption, 0, len(s.tmpls))
	for _, t := range s.templateInfos() {
		out = append(out, views.TemplateOption{ID: t.ID, Name: t.Name, Description: t.Description, Nodes: t.Nodes, Tests: t.Tests})
	}
	return out
}

// template returns a fresh copy of template id's document (the caller may
// change it), or a 404.
func (s *Server) template(id string) (*engine.Chain, error) {
	for _, t := range s.tmpls {
		if t.ID == id {
			return t.Doc.Clone(), nil
		}
	}
	return nil, apiError(ENOTFOUND, "not_found", fmt.Sprintf("there is no template %q", id), map[string]any{"template": id})
}

// GET /v1/templates
func (s *Server) listTemplates(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"templates": s.templateInfos()})
}

// POST /v1/templates/{id}/chains {"name"?}: a new chain from the template.
// With a name, that name (taken: 409); without, the template's, made
// unique as an import's is ("name (2)").
func (s *Server) createFromTemplate(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := bindJSON(c, &body); err != nil {
		return err
	}
	ch, err := s.chainFromTemplate(c, c.Param("id"), strings.TrimSpace(body.Name))
	if err != nil {
		return err
	}
	return s.chainCreated(c, ch)
}

// chainFromTemplate saves a new chain from template id: the API and the
// New chain dialog share it.
func (s *Server) chainFromTemplate(c echo.Context, id, name string) (*store.Chain, error) {
	doc, err := s.template(id)
	if err != nil {
		return nil, err
	}
	message := "created from the template " + id
	if name == "" {
		return s.importDoc(c, doc, nil, message)
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	doc.Name = name
	ch, err := s.db.CreateChain(c.Request().Context(), doc, message)
	if err != nil {
		return nil, storeErr(err, "chain")
	}
	return ch, nil
}
