// Package builtin holds the tools that ship with Chain Studio: echo,
// transform, template, http, delay, fail, interrupt, read_file, write_file
// and proc.
//
// Tools that reach outside the process (files, programs, the network) are
// governed by Options; whatever the host has not allowed is refused with an
// error that wraps tool.ErrDenied.
package builtin

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/chainstudio/studio/engine/sandbox"
	"github.com/chainstudio/studio/engine/tool"
)

// Defaults applied by Tools to zero-valued Options fields.
const (
	DefaultHTTPTimeout      = 30 * time.Second
	DefaultMaxResponseBytes = 10 << 20
	DefaultMaxFileBytes     = 10 << 20
)

// Options configures the built-in tools. The zero value is the most
// restrictive configuration: no file access, no programs, no private network
// destinations.
type Options struct {
	// Workspace is the folder read_file and write_file work in, and the
	// folder proc runs programs in. "" disables file access entirely.
	Workspace string
	// ProcAllow lists the executables proc may run: absolute paths, or bare
	// names resolved with exec.LookPath at call time. Empty disables proc.
	ProcAllow []string
	// ProcAllowEnv lists the environment variable names a proc node may set
	// (its `env` field). Empty: none. Dynamic-loader and C-library variables
	// (LD_*, GCONV_PATH, ...; see LoaderEnv) are refused even when listed.
	ProcAllowEnv []string
	// HTTPAllowPrivate lets the http tool reach addresses that are not
	// globally reachable unicast (loopback, private, link-local, shared,
	// reserved, documentation, multicast, and IPv6 addresses embedding one;
	// the table is specialRanges). The guard checks the resolved IP of every
	// connection (redirects included).
	HTTPAllowPrivate bool
	// TemplateBudget bounds each template rendering (zero fields:
	// DefaultTemplateBudget).
	TemplateBudget TemplateBudget
	// HTTPTimeout bounds every http call (default 30s); the per-call
	// `timeout` input can only shorten it.
	HTTPTimeout time.Duration
	// MaxResponseBytes caps the size of an http response body (default 10 MiB).
	MaxResponseBytes int64
	// MaxFileBytes caps what read_file reads and write_file writes (default 10 MiB).
	MaxFileBytes int64
	// Code runs code nodes' scripts (a *sandbox.Pool); nil refuses them.
	Code CodeRunner
}

func (o Options) withDefaults() Options {
	if o.HTTPTimeout <= 0 {
		o.HTTPTimeout = DefaultHTTPTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	o.ProcAllow = append([]string(nil), o.ProcAllow...)
	o.ProcAllowEnv = append([]string(nil), o.ProcAllowEnv...)
	return o
}

// Tools returns name → func for every built-in tool, configured by opts.
func Tools(opts Options) map[string]tool.Func {
	opts = opts.withDefaults()
	files := &fileTools{workspace: opts.Workspace, maxBytes: opts.MaxFileBytes}
	return map[string]tool.Func{
		"echo":       echoTool,
		"transform":  transformTool,
		"template":   templateTool(opts.TemplateBudget),
		"http":       newHTTPTool(opts, nil).call,
		"delay":      delayTool,
		"fail":       failTool,
		"interrupt":  interruptTool,
		"read_file":  files.read,
		"write_file": files.write,
		"code":       codeTool(opts.Code),
		"proc":       (&procTool{allow: opts.ProcAllow, allowEnv: opts.ProcAllowEnv, workspace: opts.Workspace}).call,
	}
}

// Info describes a built-in tool for the designer, GET /v1/tools and
// `studio help`.
type Info struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema of the input (type, properties,
	// required, enum, default, description, minimum/maximum, items), which
	// the host declares with engine.Registry.SetInputSchema.
	InputSchema map[string]any
}

// Catalog lists the built-in tools, sorted by name. Each call builds fresh
// maps, so a caller may keep or change them.
func Catalog() []Info {
	out := []Info{
		{"echo", "Returns its input unchanged.", object(nil)},
		{"transform", "Reshapes data with a JMESPath expression.", dataField("data", object([]string{"expression"},
			prop("expression", str("JMESPath expression, e.g. items[?price > `10`].name", 1)),
			prop("data", anyOf("value to query (default: the whole input minus `expression`)"))))},
		{"template", "Renders a Go text/template to {\"text\": ...}.", dataField("data", object([]string{"template"},
			prop("template", str("Go text/template source, e.g. Hello {{.name}}", 1)),
			prop("data", anyOf("value the template sees as `.` (default: the whole input minus `template`)"))))},
		{"http", "Makes an HTTP request; returns status, headers and body (4xx/5xx are not errors).", object([]string{"url"},
			prop("method", with(str("HTTP method", 0), "enum", []any{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}, "default", "GET")),
			prop("url", str("http:// or https:// URL", 1)),
			prop("headers", map[string]any{"type": "object", "description": "request headers, name → string value", "additionalProperties": map[string]any{"type": "string"}}),
			prop("body", anyOf("string sent as is, or any other value sent as JSON")),
			prop("timeout", with(num("seconds; capped by the host's HTTP timeout"), "exclusiveMinimum", 0.0, "default", DefaultHTTPTimeout.Seconds())),
			prop("auth", map[string]any{"type": "object", "description": "a stored credential sent with the request, by name; its value never enters the run",
				"required": []any{"credential"}, "additionalProperties": false,
				"properties": map[string]any{"credential": map[string]any{"type": "string", "minLength": 1.0, "description": "the credential's name", "x-credential": "http"}}}))},
		{"code", "Runs a JavaScript function body in an isolated sandbox and returns what it returns.", object([]string{"code"},
			prop("code", with(str("JavaScript function body (ES2020): reads input, state, node_results (or nodes), output, params, item, index; return a JSON value; console.log lines are kept", 1),
				"maxLength", float64(sandbox.MaxScriptBytes), "x-format", "javascript")))},
		{"delay", "Waits for a number of milliseconds, then returns `data` (or, without it, its whole input).", dataField("data", object([]string{"ms"},
			prop("ms", with(num("milliseconds to wait (0 to 3600000, one hour)"), "minimum", 0.0, "maximum", float64(maxDelayMS))),
			prop("data", anyOf("value returned after the wait (default: the whole input)"))))},
		{"fail", "Fails with a message, optionally only until a given attempt (to try retry policies).", object(nil,
			prop("message", with(str("error message", 0), "default", "fail tool failed")),
			prop("until_attempt", with(integer("succeed from this 1-based attempt on"), "minimum", 1.0)))},
		{"interrupt", "Pauses the run until a person resumes it; returns the resume value.", object(nil,
			prop("prompt", anyOf("what to ask (default: the whole input)")))},
		{"read_file", "Reads a text file inside the workspace.", object([]string{"path"},
			prop("path", str("path relative to the workspace", 1)))},
		{"write_file", "Writes a file inside the workspace.", object([]string{"path"},
			prop("path", str("path relative to the workspace", 1)),
			prop("content", anyOf("string written as is, any other value written as JSON")),
			prop("append", with(boolean("append instead of replacing"), "default", false)),
			prop("mkdir", with(boolean("create missing parent folders"), "default", false)))},
		{"proc", "Runs an allowed program (no shell); returns stdout, stderr and exit_code.", object([]string{"argv"},
			prop("argv", map[string]any{"type": "array", "description": "program and arguments; argv[0] must be allowed by the host",
				"items": map[string]any{"type": "string"}, "minItems": 1.0}),
			prop("env", map[string]any{"type": "object", "description": "extra environment variables, each allowed by name by the host (only PATH is inherited)",
				"additionalProperties": map[string]any{"type": "string"}}),
			prop("dir", str("working folder inside the workspace", 0)),
			prop("timeout", with(num("seconds before the program is killed"), "exclusiveMinimum", 0.0)),
			prop("stdin", str("text fed to standard input", 0)))},
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// InputSchemas maps each built-in tool to its input schema (from Catalog),
// for engine.Registry.SetInputSchema.
func InputSchemas() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, t := range Catalog() {
		out[t.Name] = t.InputSchema
	}
	return out
}

// DataField is the schema keyword naming the input field that carries the
// data a node receives from upstream. The designer wires a node it adds
// after another with `input_map: {<field>: "output"}`, so the data flows
// on visibly in the document even when the node has a static input.
const DataField = "x-data-field"

func dataField(name string, s map[string]any) map[string]any {
	s[DataField] = name
	return s
}

type property struct {
	name   string
	schema map[string]any
}

func prop(name string, schema map[string]any) property { return property{name, schema} }

// object is an object schema with the properties in order ("x-order" keeps
// the order for forms: JSON objects have none).
func object(required []string, props ...property) map[string]any {
	m := map[string]any{}
	order := make([]any, 0, len(props))
	for _, p := range props {
		m[p.name] = p.schema
		order = append(order, p.name)
	}
	s := map[string]any{"type": "object", "properties": m, "x-order": order}
	if len(required) > 0 {
		req := make([]any, len(required))
		for i, r := range required {
			req[i] = r
		}
		s["required"] = req
	}
	return s
}

func str(desc string, minLen int) map[string]any {
	s := map[string]any{"type": "string", "description": desc}
	if minLen > 0 {
		s["minLength"] = float64(minLen)
	}
	return s
}

func num(desc string) map[string]any { return map[string]any{"type": "number", "description": desc} }

func integer(desc string) map[string]any {
	return map[string]any{"type": "integer", "description": desc}
}

func boolean(desc string) map[string]any {
	return map[string]any{"type": "boolean", "description": desc}
}

func anyOf(desc string) map[string]any { return map[string]any{"description": desc} }

// with adds keyword/value pairs to a schema.
func with(s map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		s[kv[i].(string)] = kv[i+1]
	}
	return s
}

// ---- input helpers ----

// typeName names the JSON type of v for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		return "number"
	case map[string]any:
		return "object"
	case []any, []string:
		return "array"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// getString reads an optional string field; ok is false when absent or null.
func getString(toolName string, in map[string]any, key string) (s string, ok bool, err error) {
	v, present := in[key]
	if !present || v == nil {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, fmt.Errorf("%s: field %q must be a string, got %s", toolName, key, typeName(v))
	}
	return s, true, nil
}

// requireString reads a required, non-empty string field.
func requireString(toolName string, in map[string]any, key string) (string, error) {
	s, ok, err := getString(toolName, in, key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%s: field %q is required", toolName, key)
	}
	if s == "" {
		return "", fmt.Errorf("%s: field %q must not be empty", toolName, key)
	}
	return s, nil
}

// toFloat converts a JSON-like number to float64.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// getNumber reads an optional finite number field.
func getNumber(toolName string, in map[string]any, key string) (f float64, ok bool, err error) {
	v, present := in[key]
	if !present || v == nil {
		return 0, false, nil
	}
	f, isNum := toFloat(v)
	if !isNum {
		return 0, false, fmt.Errorf("%s: field %q must be a number, got %s", toolName, key, typeName(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false, fmt.Errorf("%s: field %q must be a finite number, got %v", toolName, key, f)
	}
	return f, true, nil
}

// getBool reads an optional boolean field (absent or null → false).
func getBool(toolName string, in map[string]any, key string) (bool, error) {
	v, present := in[key]
	if !present || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s: field %q must be a boolean, got %s", toolName, key, typeName(v))
	}
	return b, nil
}

// getStringMap reads an optional object whose values are all strings.
func getStringMap(toolName string, in map[string]any, key string) (map[string]string, error) {
	v, present := in[key]
	if !present || v == nil {
		return nil, nil
	}
	out := map[string]string{}
	switch m := v.(type) {
	case map[string]string:
		for k, s := range m {
			out[k] = s
		}
	case map[string]any:
		for k, e := range m {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s: field %q: value of %q must be a string, got %s", toolName, key, k, typeName(e))
			}
			out[k] = s
		}
	default:
		return nil, fmt.Errorf("%s: field %q must be an object of strings, got %s", toolName, key, typeName(v))
	}
	return out, nil
}

// dataOrInputWithout returns in["data"] (when present) or a shallow copy of in without
// the given key. in itself is never modified.
func dataOrInputWithout(in map[string]any, key string) any {
	if d, ok := in["data"]; ok {
		return d
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// secondsString formats a duration in seconds the way people write it: 2s, 0.5s.
func secondsString(sec float64) string {
	return fmt.Sprintf("%ss", formatFloat(sec))
}

func formatFloat(f float64) string {
	return fmt.Sprint(f)
}

// denied wraps tool.ErrDenied with a message saying what was refused.
func denied(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), tool.ErrDenied)
}
