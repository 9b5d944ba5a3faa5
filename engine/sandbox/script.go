package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Names are the names a script reads, in the order the wrapper function
// takes them. A scope key that is not one of them is not visible.
var Names = []string{"input", "state", "node_results", "nodes", "output", "params", "item", "index"}

// The script is the body of a function. The prefix is on the script's first
// line so line numbers are the script's own; columns on line 1 are shifted
// by its length, which SyntaxError takes back.
var (
	wrapPrefix = "(function(" + strings.Join(Names, ", ") + ", console) {"
	wrapSuffix = "\n})"
)

// SyntaxError is a script that does not parse, at a 1-based line and column
// (in characters) of the script's own text.
type SyntaxError struct {
	Line, Column int
	Message      string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("syntax error at line %d, column %d: %s", e.Line, e.Column, e.Message)
}

// Check parses a script as the sandbox will run it, without running it.
// It is safe in the studio's process: parsing is bounded by the script's
// size, which Check caps first.
func Check(code string) error {
	_, err := compile(code)
	return err
}

func checkSize(code string) error {
	if len(code) > MaxScriptBytes {
		return fmt.Errorf("the script is %d bytes, over the limit of %d (64 KiB)", len(code), MaxScriptBytes)
	}
	if !utf8.ValidString(code) {
		return errors.New("the script is not valid UTF-8")
	}
	return nil
}

// compile parses and compiles a script wrapped as a function expression.
func compile(code string) (*goja.Program, error) {
	if err := checkSize(code); err != nil {
		return nil, err
	}
	src := wrapPrefix + code + wrapSuffix
	ast, err := parser.ParseFile(nil, "code.js", src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		var list parser.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			return nil, syntaxAt(code, list[0].Position.Line, list[0].Position.Column, list[0].Message)
		}
		return nil, &SyntaxError{Line: 1, Column: 1, Message: err.Error()}
	}
	prg, err := goja.CompileAST(ast, false)
	if err != nil {
		var ce *goja.CompilerSyntaxError
		if errors.As(err, &ce) && ce.File != nil {
			p := ce.File.Position(ce.Offset)
			return nil, syntaxAt(code, p.Line, p.Column, ce.Message)
		}
		var re *goja.CompilerReferenceError
		if errors.As(err, &re) && re.File != nil {
			p := re.File.Position(re.Offset)
			return nil, syntaxAt(code, p.Line, p.Column, re.Message)
		}
		return nil, &SyntaxError{Line: 1, Column: 1, Message: err.Error()}
	}
	return prg, nil
}

// syntaxAt maps a position in the wrapped source to the script's own: line
// 1 loses the prefix, and the suffix's line is the script's end.
func syntaxAt(code string, line, col int, msg string) *SyntaxError {
	if line == 1 {
		col -= utf8.RuneCountInString(wrapPrefix)
	}
	lines := strings.Count(code, "\n") + 1
	if line > lines { // the parser stopped at the wrapper's closing brace
		line = lines
		last := code[strings.LastIndexByte(code, '\n')+1:]
		col = utf8.RuneCountInString(last) + 1
	}
	if col < 1 {
		col = 1
	}
	return &SyntaxError{Line: line, Column: col, Message: msg}
}

// programCacheLimit bounds the compiled programs a child keeps.
const programCacheLimit = 256

// programs caches compiled scripts by source: a map over 10,000 items
// compiles its body once.
type programs struct {
	mu sync.Mutex
	m  map[string]*goja.Program
}

func (c *programs) get(code string) (*goja.Program, error) {
	c.mu.Lock()
	p, ok := c.m[code]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := compile(code)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= programCacheLimit {
		c.m = map[string]*goja.Program{} // simple and bounded: start over
	}
	c.m[code] = p
	c.mu.Unlock()
	return p, nil
}

// interrupt is what stops a running script from outside (the CPU or memory
// watch); its kind goes into the Response.
type interrupt struct{ kind, msg string }

// execute runs one request in a fresh runtime: nothing a script leaves
// behind (globals, prototypes it changed) reaches the next call. stop is
// set while the script runs so a watch can interrupt it.
func execute(cache *programs, req *Request, stop func(vm *goja.Runtime)) (resp Response) {
	prg, err := cache.get(req.Code)
	if err != nil {
		resp.Kind, resp.Error = KindSyntax, err.Error()
		var se *SyntaxError
		if errors.As(err, &se) {
			resp.Line, resp.Column = se.Line, se.Column
		}
		return resp
	}
	vm := goja.New()
	logs := &logBuffer{}
	console := vm.NewObject()
	stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
	logFn := func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = logText(a, stringify)
		}
		logs.add(strings.Join(parts, " "))
		return goja.Undefined()
	}
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		_ = console.Set(name, logFn)
	}
	defer func() { resp.Logs, resp.LogsDropped = logs.lines, logs.dropped }()

	stop(vm)
	defer stop(nil)
	fnv, err := vm.RunProgram(prg)
	if err != nil {
		return failure(err)
	}
	fn, ok := goja.AssertFunction(fnv)
	if !ok {
		resp.Kind, resp.Error = KindRuntime, "the script did not compile to a function"
		return resp
	}
	// The data enters as JSON parsed inside the VM: plain JavaScript
	// objects, never Go values wrapped as host objects.
	parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	scopeV, err := parse(goja.Undefined(), vm.ToValue(string(req.Scope)))
	if err != nil {
		return failure(err)
	}
	scope := scopeV.ToObject(vm)
	args := make([]goja.Value, 0, len(Names)+1)
	for _, n := range Names {
		v := scope.Get(n)
		if n == "nodes" && (v == nil || goja.IsUndefined(v)) {
			v = scope.Get("node_results") // nodes is node_results' short name
		}
		args = append(args, v)
	}
	args = append(args, console)
	ret, err := fn(goja.Undefined(), args...)
	if err != nil {
		return failure(err)
	}
	if ret == nil || goja.IsUndefined(ret) {
		resp.Value = json.RawMessage("null")
		return resp
	}
	out, err := stringify(goja.Undefined(), ret)
	if err != nil {
		resp.Kind, resp.Error = KindOutput, "the script's result cannot be written as JSON: "+err.Error()
		return resp
	}
	if goja.IsUndefined(out) { // a function or a symbol
		resp.Kind, resp.Error = KindOutput, "the script returned a value JSON cannot hold (a function or a symbol)"
		return resp
	}
	s := out.String()
	if len(s) > MaxOutputBytes {
		resp.Kind, resp.Error = KindOutput, fmt.Sprintf("the script's result is %d bytes as JSON, over the output limit of %d (1 MiB)", len(s), MaxOutputBytes)
		return resp
	}
	resp.Value = json.RawMessage(s)
	return resp
}

// failure turns a goja error into a Response: an interrupt keeps the kind
// its watch gave, a thrown error keeps its line and column.
func failure(err error) (resp Response) {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if in, ok := ie.Value().(interrupt); ok {
			resp.Kind, resp.Error = in.kind, in.msg
			return resp
		}
		resp.Kind, resp.Error = KindRuntime, "the script was interrupted"
		return resp
	}
	resp.Kind = KindRuntime
	var ex *goja.Exception
	if errors.As(err, &ex) {
		resp.Error = ex.Value().String()
		for _, f := range ex.Stack() {
			p := f.Position()
			if p.Line > 0 {
				resp.Line, resp.Column = p.Line, p.Column
				if p.Line == 1 {
					resp.Column -= utf8.RuneCountInString(wrapPrefix)
				}
				break
			}
		}
		if resp.Line > 0 {
			resp.Error = fmt.Sprintf("%s (line %d, column %d)", resp.Error, resp.Line, resp.Column)
		}
		return resp
	}
	resp.Error = err.Error()
	return resp
}

// logText writes one console.log argument: text as is, anything else as
// JSON (undefined and functions by their name).
func logText(v goja.Value, stringify goja.Callable) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if s, ok := v.Export().(string); ok {
		return s
	}
	if out, err := stringify(goja.Undefined(), v); err == nil && !goja.IsUndefined(out) {
		return out.String()
	}
	return v.String()
}

// logBuffer keeps at most MaxLogLines lines and MaxLogBytes bytes.
type logBuffer struct {
	lines   []string
	bytes   int
	dropped int
}

const maxLogLine = 2 << 10

func (b *logBuffer) add(s string) {
	if len(s) > maxLogLine {
		cut := maxLogLine
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	if len(b.lines) >= MaxLogLines || b.bytes+len(s) > MaxLogBytes {
		b.dropped++
		return
	}
	b.lines = append(b.lines, s)
	b.bytes += len(s)
}
