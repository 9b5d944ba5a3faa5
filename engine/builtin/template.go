package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/tool"
)

// maxTemplateOutput caps the rendered text of the template tool.
const maxTemplateOutput = 1 << 20

// TemplateBudget bounds one rendering of the template tool. text/template
// has no hook between steps, and `{{range 100000}}` is a loop nothing
// outside can stop, so the tool rewrites the parsed template: every range
// body and every template (the main one and each define) starts with a
// hidden step that counts against Steps and looks at the node's context.
// Every function that can build a value (printf, print, println, html, js,
// urlquery, the studio's json, upper, lower, replace, join) is replaced by
// one that refuses a result over the output cap before building it where
// the size can be known, counts a step, and charges what it built against
// Bytes. Writes check the context and the output cap. So every loop
// iteration, call and write is paid for, and the rendering stops within one
// step of its node's deadline.
type TemplateBudget struct {
	Steps int64 // range iterations, template calls and function calls
	Bytes int64 // bytes of all values built by functions
}

// DefaultTemplateBudget is the budget the template tool uses unless the
// host gives another in Options.TemplateBudget (studio's
// --template-max-steps and --template-max-bytes). It is never changed at
// run time.
var DefaultTemplateBudget = TemplateBudget{Steps: 5_000_000, Bytes: 64 << 20}

func (b TemplateBudget) norm() TemplateBudget {
	if b.Steps <= 0 {
		b.Steps = DefaultTemplateBudget.Steps
	}
	if b.Bytes <= 0 {
		b.Bytes = DefaultTemplateBudget.Bytes
	}
	return b
}

// tplMeter is one rendering's account.
type tplMeter struct {
	ctx          context.Context
	b            TemplateBudget
	steps, bytes int64
	depth        int
}

// maxTemplateDepth bounds nested template calls; text/template's own
// limit (100,000) lets one rendering take about 64 MiB of stack.
const maxTemplateDepth = 1000

func (m *tplMeter) step() error {
	if err := expr.ContextError(m.ctx); err != nil {
		return err
	}
	if m.steps++; m.steps > m.b.Steps {
		return &expr.BudgetError{Budget: "template_steps", Limit: m.b.Steps}
	}
	return nil
}

// room refuses a value of n bytes before it is built.
func (m *tplMeter) room(n int64) error {
	if n > maxTemplateOutput {
		return &expr.BudgetError{Budget: "template_value", Limit: maxTemplateOutput}
	}
	if m.bytes+n > m.b.Bytes {
		return &expr.BudgetError{Budget: "template_bytes", Limit: m.b.Bytes}
	}
	return nil
}

// built charges a value just built.
func (m *tplMeter) built(s string) (string, error) {
	if err := m.room(int64(len(s))); err != nil {
		return "", err
	}
	m.bytes += int64(len(s))
	return s, nil
}

// argBytes is the size of what formatting args would at least copy.
func argBytes(args []any) int64 {
	var n int64
	for _, a := range args {
		switch x := a.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		default:
			n += 24
		}
	}
	return n
}

// checkFormat refuses widths and precisions over the output cap
// (`%1000000000d` would allocate them), written or passed with `*`.
func checkFormat(format string, args []any) error {
	num := int64(0)
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c >= '0' && c <= '9':
			if num = num*10 + int64(c-'0'); num > maxTemplateOutput {
				return &expr.BudgetError{Budget: "template_value", Limit: maxTemplateOutput}
			}
			continue
		case c == '*':
			for _, a := range args {
				if f, ok := toFloat(a); ok && (f > maxTemplateOutput || f < -maxTemplateOutput) {
					return &expr.BudgetError{Budget: "template_value", Limit: maxTemplateOutput}
				}
			}
		}
		num = 0
	}
	return nil
}

// templateFuncs are pure helpers; none of them touches the system. Each
// rendering gets its own set, bound to its meter.
func templateFuncs(m *tplMeter) template.FuncMap {
	str := func(f func(string) string) func(string) (string, error) {
		return func(s string) (string, error) {
			if err := m.step(); err != nil {
				return "", err
			}
			if err := m.room(3 * int64(len(s))); err != nil { // upper/lower can grow 3 bytes a byte at most
				return "", err
			}
			return m.built(f(s))
		}
	}
	escaper := func(f func(...any) string, grow int64) func(...any) (string, error) {
		return func(args ...any) (string, error) {
			if err := m.step(); err != nil {
				return "", err
			}
			if err := m.room(grow * argBytes(args)); err != nil {
				return "", err
			}
			return m.built(f(args...))
		}
	}
	return template.FuncMap{
		hiddenStep: func() (string, error) { return "", m.step() },
		hiddenEnter: func() (string, error) {
			if m.depth++; m.depth > maxTemplateDepth {
				return "", &expr.BudgetError{Budget: "template_depth", Limit: maxTemplateDepth}
			}
			return "", m.step()
		},
		hiddenLeave: func() string { m.depth--; return "" },
		"printf": func(format string, args ...any) (string, error) {
			if err := m.step(); err != nil {
				return "", err
			}
			if err := checkFormat(format, args); err != nil {
				return "", err
			}
			if err := m.room(int64(len(format)) + argBytes(args)); err != nil {
				return "", err
			}
			return m.built(fmt.Sprintf(format, args...))
		},
		"print":    escaper(fmt.Sprint, 1),
		"println":  escaper(fmt.Sprintln, 1),
		"html":     escaper(template.HTMLEscaper, 6),
		"js":       escaper(template.JSEscaper, 6),
		"urlquery": escaper(template.URLQueryEscaper, 3),
		"json": func(v any) (string, error) {
			if err := m.step(); err != nil {
				return "", err
			}
			b, err := json.Marshal(v)
			if err != nil {
				return "", err
			}
			return m.built(string(b))
		},
		"upper": str(strings.ToUpper),
		"lower": str(strings.ToLower),
		"trim": func(s string) (string, error) {
			return strings.TrimSpace(s), m.step()
		},
		"replace": func(s, old, new string) (string, error) {
			if err := m.step(); err != nil {
				return "", err
			}
			n := int64(strings.Count(s, old)) // "" matches between every rune
			if err := m.room(int64(len(s)) + n*int64(len(new))); err != nil {
				return "", err
			}
			return m.built(strings.ReplaceAll(s, old, new))
		},
		"contains": func(s, sub string) (bool, error) { return strings.Contains(s, sub), m.step() },
		"join": func(sep string, v any) (string, error) {
			if err := m.step(); err != nil {
				return "", err
			}
			var parts []string
			switch l := v.(type) {
			case []string:
				parts = l
			case []any:
				parts = make([]string, len(l))
				size := int64(0)
				for i, e := range l {
					parts[i] = fmt.Sprint(e)
					if size += int64(len(parts[i]) + len(sep)); size > maxTemplateOutput {
						return "", m.room(size)
					}
				}
			case nil:
				return "", nil
			default:
				return "", fmt.Errorf("join: expected an array, got %s", typeName(v))
			}
			size := int64(0)
			for _, p := range parts {
				size += int64(len(p) + len(sep))
			}
			if err := m.room(size); err != nil {
				return "", err
			}
			return m.built(strings.Join(parts, sep))
		},
		"default": func(def, v any) any {
			if v == nil || v == "" {
				return def
			}
			return v
		},
	}
}

// The functions the rewritten template calls: a step at the start of every
// range iteration, and entering and leaving every template.
const (
	hiddenStep  = "__studio_step"
	hiddenEnter = "__studio_enter"
	hiddenLeave = "__studio_leave"
)

// addSteps puts a hidden step at the start of every template body and
// every range body of t.
func addSteps(t *template.Template) {
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Tree.Root == nil {
			continue
		}
		tr := tt.Tree
		var walk func(l *parse.ListNode)
		walk = func(l *parse.ListNode) {
			if l == nil {
				return
			}
			for _, n := range l.Nodes {
				switch x := n.(type) {
				case *parse.IfNode:
					walk(x.List)
					walk(x.ElseList)
				case *parse.WithNode:
					walk(x.List)
					walk(x.ElseList)
				case *parse.RangeNode:
					walk(x.List)
					walk(x.ElseList)
					if x.List != nil {
						x.List.Nodes = append([]parse.Node{stepNode(tr, x.Position(), hiddenStep)}, x.List.Nodes...)
					}
				case *parse.ListNode:
					walk(x)
				}
			}
		}
		walk(tr.Root)
		// A template body runs to its end unless the rendering fails, so
		// enter and leave pair up.
		pos := tr.Root.Position()
		tr.Root.Nodes = append(append([]parse.Node{stepNode(tr, pos, hiddenEnter)}, tr.Root.Nodes...), stepNode(tr, pos, hiddenLeave))
	}
}

// stepNode is {{fn}}, which prints nothing.
func stepNode(tr *parse.Tree, pos parse.Pos, fn string) parse.Node {
	id := parse.NewIdentifier(fn).SetTree(tr).SetPos(pos)
	cmd := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{id}}
	pipe := &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Cmds: []*parse.CommandNode{cmd}}
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: pipe}
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
// whole input without `template`) and returns {"text": ...}, under budget b.
func templateTool(b TemplateBudget) tool.Func {
	b = b.norm()
	return func(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
		return renderTemplate(ctx, b, in)
	}
}

func renderTemplate(ctx context.Context, b TemplateBudget, in map[string]any) (any, error) {
	src, ok, err := getString("template", in, "template")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New(`template: field "template" is required`)
	}
	m := &tplMeter{ctx: ctx, b: b}
	t, err := template.New("template").Funcs(templateFuncs(m)).Parse(src)
	if err != nil {
		return nil, templateError("parse", err)
	}
	addSteps(t)
	w := &cappedWriter{ctx: ctx, max: maxTemplateOutput}
	if err := t.Execute(w, dataOrInputWithout(in, "template")); err != nil {
		if errors.Is(err, errTemplateTooLarge) {
			return nil, fmt.Errorf("template: %w", errTemplateTooLarge)
		}
		if err := expr.ContextError(ctx); err != nil {
			return nil, err
		}
		var be *expr.BudgetError
		if errors.As(err, &be) {
			return nil, fmt.Errorf("template: %w", be)
		}
		return nil, templateError("execution", err)
	}
	return map[string]any{"text": w.buf.String()}, nil
}
