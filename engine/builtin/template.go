package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/chainstudio/studio/engine/tool"
)

// maxTemplateOutput caps the rendered text of the template tool.
const maxTemplateOutput = 1 << 20

// templateFuncs are pure helpers; none of them touches the system.
var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"upper":    strings.ToUpper,
	"lower":    strings.ToLower,
	"trim":     strings.TrimSpace,
	"replace":  func(s, old, new string) string { return strings.ReplaceAll(s, old, new) },
	"contains": func(s, sub string) bool { return strings.Contains(s, sub) },
	"join": func(sep string, v any) (string, error) {
		switch l := v.(type) {
		case []string:
			return strings.Join(l, sep), nil
		case []any:
			parts := make([]string, len(l))
			for i, e := range l {
				parts[i] = fmt.Sprint(e)
			}
			return strings.Join(parts, sep), nil
		case nil:
			return "", nil
		}
		return "", fmt.Errorf("join: expected an array, got %s", typeName(v))
	},
	"default": func(def, v any) any {
		if v == nil || v == "" {
			return def
		}
		return v
	},
}

// The template is named "template", so text/template reports
// "template: template:LINE: msg" or "template: template:LINE:COL: msg".
var templateErrRE = regexp.MustCompile(`^template: template:(\d+)(?::(\d+))?: `)

func templateError(stage string, err error) error {
	msg := err.Error()
	if m := templateErrRE.FindStringSubmatch(msg); m != nil {
		rest := msg[len(m[0]):]
		if m[2] != "" {
			return fmt.Errorf("template: %s error at line %s, column %s: %s", stage, m[1], m[2], rest)
		}
		return fmt.Errorf("template: %s error at line %s: %s", stage, m[1], rest)
	}
	return fmt.Errorf("template: %s error: %s", stage, strings.TrimPrefix(msg, "template: "))
}

var errTemplateTooLarge = fmt.Errorf("output exceeds %d bytes (1 MiB)", maxTemplateOutput)

// cappedWriter accumulates output up to a limit and stops rendering when the
// context is cancelled.
type cappedWriter struct {
	ctx context.Context
	buf strings.Builder
	max int
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if w.buf.Len()+len(p) > w.max {
		return 0, errTemplateTooLarge
	}
	return w.buf.Write(p)
}

// templateTool renders the Go text/template `template` with `data` (or the
// whole input without `template`) and returns {"text": ...}.
func templateTool(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	src, ok, err := getString("template", in, "template")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New(`template: field "template" is required`)
	}
	t, err := template.New("template").Funcs(templateFuncs).Parse(src)
	if err != nil {
		return nil, templateError("parse", err)
	}
	w := &cappedWriter{ctx: ctx, max: maxTemplateOutput}
	if err := t.Execute(w, dataOrInputWithout(in, "template")); err != nil {
		if errors.Is(err, errTemplateTooLarge) {
			return nil, fmt.Errorf("template: %w", errTemplateTooLarge)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, templateError("execution", err)
	}
	return map[string]any{"text": w.buf.String()}, nil
}
