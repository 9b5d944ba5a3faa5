package chain

import (
	"sort"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine/expr"
)

// An approval carries its context (docs/chain-format.md, "Approvals"): the
// strings of an interrupt node's config.prompt are templates over the run's
// data ({{ input.order }}, {{ classify.output.category }}), rendered when the
// node pauses, and config.fields names the values shown beside the prompt
// (label → expression). Both use the expression language of input_map, so
// a prompt reads what the node's input_map could.

// maxAskFields bounds config.fields: a short table, not a second input.
const maxAskFields = 20

// AskField is one entry of config.fields, parsed.
type AskField struct {
	Label string
	Expr  *expr.Expr
}

// RenderTemplates returns v with every string that holds a {{ }} placeholder
// rendered by render; v is returned as is when it holds none (a prompt of
// plain text costs nothing), else copied. field is v's path
// (config.prompt), named with the path inside v in every error:
// config.prompt.question: …. render nil only checks the syntax.
func RenderTemplates(v any, field string, render func(*expr.Template) (any, error)) (any, error) {
	if !hasTemplate(v) {
		return v, nil
	}
	switch x := v.(type) {
	case string:
		t, err := expr.ParseTemplate(x)
		if err != nil {
			return nil, &TemplateError{Field: field, Err: err}
		}
		if render == nil {
			return x, nil
		}
		out, err := render(t)
		if err != nil {
			return nil, &TemplateError{Field: field, Err: err}
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the first error is the same on every run
		out := make(map[string]any, len(x))
		for _, k := range keys {
			r, err := RenderTemplates(x[k], field+"."+k, render)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for k, e := range x {
			r, err := RenderTemplates(e, field+"["+strconv.Itoa(k)+"]", render)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return v, nil
}

// TemplateError is a template that does not parse or render, with its path.
type TemplateError struct {
	Field string // config.prompt.question
	Err   error
}

func (e *TemplateError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *TemplateError) Unwrap() error { return e.Err }

// hasTemplate reports whether v holds a string with a {{ }} placeholder.
func hasTemplate(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, "{{")
	case map[string]any:
		for _, e := range x {
			if hasTemplate(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasTemplate(e) {
				return true
			}
		}
	}
	return false
}

// TemplateRefs lists what the templates in v read, with each one's path.
func TemplateRefs(v any, field string, visit func(field string, refs []expr.Ref)) {
	switch x := v.(type) {
	case string:
		if t, err := expr.ParseTemplate(x); err == nil && strings.Contains(x, "{{") {
			visit(field, t.Refs())
		}
	case map[string]any:
		for k, e := range x {
			TemplateRefs(e, field+"."+k, visit)
		}
	case []any:
		for k, e := range x {
			TemplateRefs(e, field+"["+strconv.Itoa(k)+"]", visit)
		}
	}
}

// parseAskFields reads config.fields: an object of label → expression.
func parseAskFields(v any, bad func(field, format string, a ...any)) []AskField {
	m, ok := v.(map[string]any)
	if !ok {
		bad("fields", "must be an object of label → expression (e.g. {\"Order\": \"input.order\"}), got %s", jsonKind(v))
		return nil
	}
	if len(m) > maxAskFields {
		bad("fields", "names %d fields; at most %d are shown", len(m), maxAskFields)
	}
	labels := make([]string, 0, len(m))
	for k := range m {
		labels = append(labels, k)
	}
	sort.Strings(labels)
	out := make([]AskField, 0, len(labels))
	for _, l := range labels {
		src, _ := m[l].(string)
		switch {
		case strings.TrimSpace(l) == "":
			bad("fields", "has an empty label")
		case strings.TrimSpace(src) == "":
			bad("fields."+l, "must be an expression such as input.order, got %s", shortJSON(m[l]))
		default:
			e, err := parseExpr(src)
			if err != nil {
				bad("fields."+l, "is not a valid expression: %v", err)
				continue
			}
			out = append(out, AskField{Label: l, Expr: e})
		}
	}
	return out
}
