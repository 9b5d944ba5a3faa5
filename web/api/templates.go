package api

import (
	"net/http"
	"strings"

	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// GET /v1/templates
func (s *Chains) ListTemplates(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"templates": s.TemplateInfos()})
}

// POST /v1/templates/{id}/chains {"name"?}: a new chain from the template.
// With a name, that name (taken: 409); without, the template's, made
// unique as an import's is ("name (2)").
func (s *Chains) CreateFromTemplate(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	ch, err := s.ChainFromTemplate(c, c.Param("id"), strings.TrimSpace(body.Name))
	if err != nil {
		return err
	}
	return s.chainCreated(c, ch)
}
