package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/chainstudio/studio/engine/sandbox"
	"github.com/chainstudio/studio/engine/tool"
)

// CodeRunner runs a script isolated from the studio: *sandbox.Pool.
type CodeRunner interface {
	Run(ctx context.Context, req *sandbox.Request) (*sandbox.Response, error)
}

// StepLog is the progress step that carries a code node's console.log lines.
const StepLog = "log"

// ErrNoSandbox is the code tool's error on a host without a sandbox.
var ErrNoSandbox = errors.New("code nodes need the script sandbox, which this host has not started (it needs Linux)")

// codeTool runs the `code` field, a JavaScript function body, in the
// sandbox. The script reads the run's data by name (sandbox.Names) and
// returns the node's output; its console.log lines become one progress
// event, sent whether the script succeeded or not.
func codeTool(runner CodeRunner) tool.Func {
	return func(ctx context.Context, in map[string]any, emit tool.Emitter) (any, error) {
		code, err := requireString("code", in, "code")
		if err != nil {
			return nil, err
		}
		if runner == nil {
			return nil, fmt.Errorf("code: %w: %w", ErrNoSandbox, tool.ErrDenied)
		}
		scope, err := codeScope(ctx, code, in)
		if err != nil {
			return nil, err
		}
		req := &sandbox.Request{Code: code, Scope: scope}
		if s := tool.ScopeFrom(ctx); s != nil {
			req.Session = s.Session // the run's calls share a warm runtime
		}
		resp, err := runner.Run(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("code: %w", err)
		}
		if len(resp.Logs) > 0 || resp.LogsDropped > 0 {
			lines := make([]any, len(resp.Logs))
			for i, l := range resp.Logs {
				lines[i] = l
			}
			p := map[string]any{"step": StepLog, "lines": lines}
			if resp.LogsDropped > 0 {
				p["dropped"] = float64(resp.LogsDropped)
			}
			emit(p)
		}
		if resp.Kind != "" {
			return nil, fmt.Errorf("code: %s", resp.Error)
		}
		out, err := resp.Decode()
		if err != nil {
			return nil, fmt.Errorf("code: the sandbox answered with bad JSON: %w", err)
		}
		return out, nil
	}
}

// codeScope is the JSON object of names the script reads: the node's
// scope when the engine gave one (tool.ScopeFrom), else (an agent's tool
// call, a host that did not mark the tool scoped) only what the tool got.
// Only the names the script writes are sent: a map body that reads its
// item must not copy the run's whole input (often the very list being
// mapped) into every one of 10,000 calls.
func codeScope(ctx context.Context, code string, in map[string]any) (json.RawMessage, error) {
	used := scriptNames(code)
	s := tool.ScopeFrom(ctx)
	var params map[string]any
	if used.params || s == nil {
		params = make(map[string]any, len(in))
		for k, v := range in {
			if k != "code" {
				params[k] = v
			}
		}
	}
	names := make([]string, 0, 8)
	values := make([]any, 0, 8)
	add := func(use bool, name string, v any) {
		if use {
			names, values = append(names, name), append(values, v)
		}
	}
	add(used.params, "params", params)
	if s != nil {
		add(used.input, "input", orEmpty(s.Input))
		add(used.state, "state", orEmpty(s.State))
		add(used.nodeResults, "node_results", orEmpty(s.NodeResults))
		add(used.output, "output", s.Output)
		if s.InMap {
			add(used.item, "item", s.Item)
			add(used.index, "index", float64(s.Index))
		}
	} else {
		add(used.input, "input", params)
		add(used.state, "state", map[string]any{})
		add(used.nodeResults, "node_results", map[string]any{})
		add(used.output, "output", params)
	}
	b := make([]byte, 0, 64)
	b = append(b, '{')
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, n...)
		b = append(b, '"', ':')
		v, err := json.Marshal(values[i])
		if err != nil {
			return nil, fmt.Errorf("code: %s cannot be written as JSON for the script: %w", n, err)
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// usedSet is which of sandbox.Names a script's text contains.
type usedSet struct{ input, state, nodeResults, output, params, item, index bool }

// scriptNames is usedNames as a set, cached by script: a map's items share
// one scan.
func scriptNames(code string) usedSet {
	namesMu.Lock()
	u, ok := namesCache[code]
	namesMu.Unlock()
	if ok {
		return u
	}
	m := usedNames(code)
	u = usedSet{input: m["input"], state: m["state"], nodeResults: m["node_results"] || m["nodes"],
		output: m["output"], params: m["params"], item: m["item"], index: m["index"]}
	namesMu.Lock()
	if len(namesCache) >= 256 {
		clear(namesCache) // simple and bounded: start over
	}
	namesCache[code] = u
	namesMu.Unlock()
	return u
}

var (
	namesMu    sync.Mutex
	namesCache = map[string]usedSet{}
)

// usedNames reports which of sandbox.Names a script's text contains as a
// word (anywhere: in a string or a comment too, which only sends more).
// A name the script builds at run time (eval("inp" + "ut")) reads undefined.
func usedNames(code string) map[string]bool {
	used := make(map[string]bool, len(sandbox.Names))
	for _, n := range sandbox.Names {
		for i := 0; ; {
			j := strings.Index(code[i:], n)
			if j < 0 {
				break
			}
			j += i
			end := j + len(n)
			if (j == 0 || !identByte(code[j-1])) && (end == len(code) || !identByte(code[end])) {
				used[n] = true
				break
			}
			i = end
		}
	}
	return used
}

func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// codeCheck is the code tool's input_check: the script parses.
func codeCheck(in map[string]any) []tool.Problem {
	code, ok := in["code"].(string)
	if !ok {
		return nil // input_schema says what is wrong with it
	}
	err := sandbox.Check(code)
	if err == nil {
		return nil
	}
	p := tool.Problem{Field: "input.code", Message: err.Error()}
	var se *sandbox.SyntaxError
	if errors.As(err, &se) {
		p.Line, p.Column = se.Line, se.Column
	}
	return []tool.Problem{p}
}

// Checks maps tools to their input_check (engine.Registry.SetCheck), for a
// host with opts: the http tool's warns of a URL the host's address policy
// will refuse.
func Checks(opts Options) map[string]tool.Check {
	return map[string]tool.Check{"code": codeCheck, "http": httpCheck(opts.HTTPAllowPrivate)}
}

// Scoped lists the built-in tools that read the run's data where their
// node runs (engine.Registry.SetScoped).
var Scoped = []string{"code"}

// Contained lists the built-in tools that are not inline yet cannot reach
// outside the studio (engine.Registry.SetContained): chain tests run them.
var Contained = []string{"code"}
