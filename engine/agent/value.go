package agent

import (
	"encoding/json"
	"fmt"

	"github.com/chainstudio/studio/engine/expr"
)

// jsonValue turns a YAML-decoded (or Go-built) value into plain JSON types:
// map[string]any, []any, string, float64, bool, nil.
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(yamlToJSON(v))
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func jsonMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := jsonValue(m)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// yamlToJSON rewrites map[any]any (YAML mappings with non-string keys) into
// map[string]any so that encoding/json accepts it.
func yamlToJSON(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = yamlToJSON(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = yamlToJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = yamlToJSON(e)
		}
		return l
	}
	return v
}

func parseExpr(src string) (*expr.Expr, error) { return expr.Parse(src) }

func parseTemplate(src string) (*expr.Template, error) {
	return expr.ParseTemplateWith(src, expr.Limits{MaxLength: 256 << 10})
}
