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

// jsvm is a runtime with a script's function compiled in it, kept for the
// next call of the same session and script.
type jsvm struct {
	vm               *goja.Runtime
	fn               goja.Callable
	parse, stringify goja.Callable
	console          *goja.Object
	logs             *logBuffer // the call in progress's
}

// newJSVM makes a runtime for prg, whose console writes to the current
// call's logs.
func newJSVM(prg *goja.Program) (*jsvm, error) {
	j := &jsvm{vm: goja.New(), logs: &logBuffer{}}
	js := j.vm.Get("JSON").ToObject(j.vm)
	j.stringify, _ = goja.AssertFunction(js.Get("stringify"))
	j.console = j.vm.NewObject()
	logFn := func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = logText(a, j.stringify)
		}
		j.logs.add(strings.Join(parts, " "))
		return goja.Undefined()
	}
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		_ = j.console.Set(name, logFn)
	}
	fnv, err := j.vm.RunProgram(prg)
	if err != nil {
		return nil, err
	}
	fn, ok := goja.AssertFunction(fnv)
	if !ok {
		return nil, errors.New("the script did not compile to a function")
	}
	j.fn = fn
	return j, nil
}

// vmCacheLimit bounds the runtimes a child keeps between calls.
const vmCacheLimit = 8

// vmCache keeps runtimes by session and script, so the calls of one run
// (a map's 10,000 items) skip a runtime's set-up, most of a trivial call's
// cost. A runtime never serves two sessions: nothing one run's script
// leaves behind reaches another run. Used by the child's one serving loop.
type vmCache struct {
	order []string // least recently used first
	m     map[string]*jsvm
}

func (c *vmCache) get(key string) *jsvm {
	j := c.m[key]
	if j != nil {
		c.touch(key)
	}
	return j
}

func (c *vmCache) touch(key string) {
	for i, k := range c.order {
		if k == key {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.order = append(c.order, key)
}

func (c *vmCache) put(key string, j *jsvm) {
	if c.m == nil {
		c.m = map[string]*jsvm{}
	}
	if len(c.m) >= vmCacheLimit {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[key] = j
	c.touch(key)
}

func (c *vmCache) drop(key string) {
	if _, ok := c.m[key]; !ok {
		return
	}
	delete(c.m, key)
	for i, k := range c.order {
		if k == key {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// execute runs one request. A request without a session gets a fresh
// runtime; one with a session reuses that session's runtime for the same
// script. The script is a function body, so what it declares is its own at
// each call; only what it puts on the global object (an undeclared name
// assigned, globalThis.x) may be seen by a later call of the same run in
// the same child. Removing those after each call cost as much as the call
// (goja lists the global object's keys by materialising every builtin).
// stop is set while the script runs so a watch can interrupt it.
func execute(cache *programs, vms *vmCache, req *Request, stop func(vm *goja.Runtime)) (resp Response) {
	prg, err := cache.get(req.Code)
	if err != nil {
		resp.Kind, resp.Error = KindSyntax, err.Error()
		var se *SyntaxError
		if errors.As(err, &se) {
			resp.Line, resp.Column = se.Line, se.Column
		}
		return resp
	}
	key := ""
	if req.Session != "" && vms != nil {
		key = req.Session + "\x00" + req.Code
	}
	var j *jsvm
	if key != "" {
		j = vms.get(key)
	}
	if j == nil {
		if j, err = newJSVM(prg); err != nil {
			return failure(err)
		}
		if key != "" {
			vms.put(key, j)
		}
	}
	j.vm.ClearInterrupt() // an interrupt that came as the last call ended
	j.logs = &logBuffer{}
	defer func() { resp.Logs, resp.LogsDropped = j.logs.lines, j.logs.dropped }()
	keep := false
	defer func() {
		if key != "" && !keep {
			vms.drop(key)
		}
	}()

	stop(j.vm)
	defer stop(nil)
	args, err := scopeArgs(j.vm, req.Scope, Names)
	if err != nil {
		keep = true // no script ran
		resp.Kind, resp.Error = KindRuntime, "the data the script reads: "+err.Error()
		return resp
	}
	args = append(args, j.console)
	ret, err := j.fn(goja.Undefined(), args...)
	if err != nil {
		resp = failure(err)
		// A throw leaves the runtime as good as it was; an interrupt (CPU,
		// memory) may have stopped it anywhere.
		var ie *goja.InterruptedError
		keep = !errors.As(err, &ie)
		return resp
	}
	keep = true
	if ret == nil || goja.IsUndefined(ret) {
		resp.Value = json.RawMessage("null")
		return resp
	}
	out, err := j.stringify(goja.Undefined(), ret)
	if err != nil {
		var ie *goja.InterruptedError
		if errors.As(err, &ie) {
			keep = false
			return failure(err)
		}
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
