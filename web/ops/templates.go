package ops

import (
	"fmt"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// TemplateInfo is a Template in GET /v1/templates and the New chain dialog.
type TemplateInfo struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Nodes       int    `json:"nodes"`
	Tests       int    `json:"tests"`
}

func (s *Env) TemplateInfos() []TemplateInfo {
	out := make([]TemplateInfo, 0, len(s.Templates))
	for _, t := range s.Templates {
		out = append(out, TemplateInfo{ID: t.ID, Name: t.Doc.Name, Description: t.Doc.Description, Nodes: len(t.Doc.Nodes), Tests: len(t.Doc.Tests)})
	}
	return out
}

// Template returns a fresh copy of Template id's document (the caller may
// change it), or a 404.
func (s *Env) Template(id string) (*chain.Chain, error) {
	for _, t := range s.Templates {
		if t.ID == id {
			return t.Doc.Clone(), nil
		}
	}
	return nil, httpcore.Error(httpcore.ENOTFOUND, "not_found", fmt.Sprintf("there is no template %q", id), map[string]any{"template": id})
}

// ChainFromTemplate saves a new chain from Template id: the API and the
// New chain dialog share it.
func (s *Env) ChainFromTemplate(c echo.Context, id, name string) (*store.Chain, error) {
	doc, err := s.Template(id)
	if err != nil {
		return nil, err
	}
	message := "created from the template " + id
	if name == "" {
		return s.ImportDoc(c, doc, nil, message)
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	doc.Name = name
	ch, err := s.DB.CreateChain(c.Request().Context(), doc, message, s.Publishable(c, doc))
	if err != nil {
		return nil, httpcore.StoreErr(err, "chain")
	}
	return ch, nil
}
