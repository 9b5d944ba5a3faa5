package pages

import "github.com/chainstudio/studio/views"

// pageTemplates are the templates for the New chain dialog.
func (s *Chains) pageTemplates() []views.TemplateOption {
	out := make([]views.TemplateOption, 0, len(s.Templates))
	for _, t := range s.TemplateInfos() {
		out = append(out, views.TemplateOption{ID: t.ID, Name: t.Name, Description: t.Description, Nodes: t.Nodes, Tests: t.Tests})
	}
	return out
}
