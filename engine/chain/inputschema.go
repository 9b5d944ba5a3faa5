package chain

// Input schemas: what a tool or agent accepts, as JSON Schema, and the
// input_schema validation rule that checks a node's static input and config
// against it. Only literal values are checked: an input_map entry is an
// expression known at run time, and it wins over a static key of the same
// name, so such keys are skipped.

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// RuleInputSchema: a node's static input or config does not fit the input
// schema of its tool or agent.
const RuleInputSchema = "input_schema"

// maxSchemaProblems bounds the input_schema issues one node reports.
const maxSchemaProblems = 10

// SchemaProblem is one place where a value does not fit a schema.
type SchemaProblem struct {
	Path    string // "input.ms", "input.headers.Accept", "config.argv[0]"
	Message string // "want a number, got \"fast\""
}

func (p SchemaProblem) String() string { return p.Path + ": " + p.Message }

// CheckSchema checks v against a JSON Schema subset (type — one or a list —,
// properties, required, enum, minimum, maximum, minLength, maxLength,
// exclusiveMinimum, minItems, maxItems, items, additionalProperties) and returns at most
// max problems, in a stable order. Keywords it does not know are ignored.
// path names the value ("input").
func CheckSchema(schema map[string]any, v any, path string, max int) []SchemaProblem {
	c := schemaChecker{max: max, root: path}
	c.check(schema, NormalizeValue(v), 0)
	return c.out
}

type schemaChecker struct {
	max int
	out []SchemaProblem
	// skip names top-level keys not to check (input_map entries).
	skip map[string]bool
	// noRequired: the value is only part of what the tool receives.
	noRequired bool
	// at is the path to the value being checked, built into a string only
	// for a problem (most fields have none).
	root string
	at   []seg
	keys []string // the objects' sorted keys, a stack shared by the nesting
}

// seg is one step of a path: an object key, or a list index (key == "").
type seg struct {
	key string
	idx int
}

func (c *schemaChecker) path() string {
	var b strings.Builder
	b.WriteString(c.root)
	for _, sg := range c.at {
		if sg.key == "" {
			fmt.Fprintf(&b, "[%d]", sg.idx)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(sg.key)
	}
	return b.String()
}

// into checks v at the step sg below the current path.
func (c *schemaChecker) into(s map[string]any, v any, sg seg, depth int) {
	c.at = append(c.at, sg)
	c.check(s, v, depth)
	c.at = c.at[:len(c.at)-1]
}

func (c *schemaChecker) add(msg string) {
	if len(c.out) < c.max {
		c.out = append(c.out, SchemaProblem{Path: c.path(), Message: msg})
	}
}

func (c *schemaChecker) full() bool { return len(c.out) >= c.max }

func (c *schemaChecker) check(s map[string]any, v any, depth int) {
	if s == nil || depth > maxShapeDepth || c.full() {
		return
	}
	if t, ok := s["type"]; ok && !typeFits(t, v) {
		c.add(fmt.Sprintf("want %s, got %s", typeWant(schemaTypes(t)), describeValue(v)))
		return
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		found := false
		for _, e := range enum {
			if scalarEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			c.add(fmt.Sprintf("want one of %s, got %s", enumList(enum), describeValue(v)))
			return
		}
	}
	switch x := v.(type) {
	case float64:
		if m, ok := toNumber(s["minimum"]); ok && x < m {
			c.add(fmt.Sprintf("want at least %s, got %s", fmtNum(m), fmtNum(x)))
		}
		if m, ok := toNumber(s["maximum"]); ok && x > m {
			c.add(fmt.Sprintf("want at most %s, got %s", fmtNum(m), fmtNum(x)))
		}
		if m, ok := toNumber(s["exclusiveMinimum"]); ok && x <= m {
			c.add(fmt.Sprintf("want more than %s, got %s", fmtNum(m), fmtNum(x)))
		}
	case string:
		n := len([]rune(x))
		if m, ok := toNumber(s["minLength"]); ok && float64(n) < m {
			if m == 1 {
				c.add("must not be empty")
			} else {
				c.add(fmt.Sprintf("want at least %s characters, got %d", fmtNum(m), n))
			}
		}
		if m, ok := toNumber(s["maxLength"]); ok && float64(n) > m {
			c.add(fmt.Sprintf("want at most %s characters, got %d", fmtNum(m), n))
		}
	case []any:
		if m, ok := toNumber(s["minItems"]); ok && float64(len(x)) < m {
			c.add(fmt.Sprintf("want at least %s items, got %d", fmtNum(m), len(x)))
		}
		if m, ok := toNumber(s["maxItems"]); ok && float64(len(x)) > m {
			c.add(fmt.Sprintf("want at most %s items, got %d", fmtNum(m), len(x)))
		}
		if items, ok := s["items"].(map[string]any); ok {
			for k, it := range x {
				c.into(items, it, seg{idx: k}, depth+1)
			}
		}
	case map[string]any:
		top := depth == 0
		props, _ := s["properties"].(map[string]any)
		if !(top && c.noRequired) {
			need := func(r string) {
				if _, has := x[r]; !has && !(top && c.skip[r]) {
					c.at = append(c.at, seg{key: r})
					c.add("required; set it")
					c.at = c.at[:len(c.at)-1]
				}
			}
			switch req := s["required"].(type) { // no copy: this runs for every object
			case []any:
				for _, r := range req {
					if k, ok := r.(string); ok {
						need(k)
					}
				}
			case []string:
				for _, k := range req {
					need(k)
				}
			}
		}
		start := len(c.keys)
		for k := range x {
			c.keys = append(c.keys, k)
		}
		keys := c.keys[start:]
		sort.Strings(keys)
		defer func() { c.keys = c.keys[:start] }()
		for _, k := range keys {
			if top && c.skip[k] {
				continue
			}
			sub, known := props[k].(map[string]any)
			if !known {
				if ap, ok := s["additionalProperties"].(bool); ok && !ap {
					c.at = append(c.at, seg{key: k})
					c.add("not a field here (fields: " + strings.Join(sortedKeys(props), ", ") + ")")
					c.at = c.at[:len(c.at)-1]
				} else if ap, ok := s["additionalProperties"].(map[string]any); ok {
					c.into(ap, x[k], seg{key: k}, depth+1)
				}
				continue
			}
			c.into(sub, x[k], seg{key: k}, depth+1)
		}
	}
}

// typeFits reports whether v has the type (a name or a list of names;
// none or "any": every value). It allocates nothing: it runs for every field.
func typeFits(t any, v any) bool {
	switch x := t.(type) {
	case string:
		return x == "any" || shapeTypeOK(x, v)
	case []any:
		named := false
		for _, e := range x {
			if n, ok := e.(string); ok {
				named = true
				if n == "any" || shapeTypeOK(n, v) {
					return true
				}
			}
		}
		return !named
	case []string:
		for _, n := range x {
			if n == "any" || shapeTypeOK(n, v) {
				return true
			}
		}
		return len(x) == 0
	}
	return true
}

// scalarEqual compares JSON values, scalars without reflection.
func scalarEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case nil:
		return b == nil
	}
	return EqualJSON(a, b)
}

func schemaTypes(t any) []string {
	switch x := t.(type) {
	case string:
		if x == "any" {
			return nil
		}
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return x
	}
	return nil
}

func schemaRequired(r any) []string {
	switch x := r.(type) {
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func typeWant(types []string) string {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = withArticle(t)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// describeValue shows a scalar as JSON ("fast" → `"fast"`), anything else by its type.
func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return strconv.Quote(x)
	case float64:
		return fmtNum(x)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	return typeName(v)
}

func enumList(enum []any) string {
	parts := make([]string, 0, len(enum))
	for _, e := range enum {
		b, _ := json.Marshal(e)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, ", ")
}

func toNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func fmtNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// RuleInputCheck: a tool's own check of a node's static input failed (a
// code node's script does not parse).
const RuleInputCheck = "input_check"

// checkInputCheck is the input_check rule for node i: the static input,
// minus the keys input_map sets (they win at run time).
func (v *validator) checkInputCheck(i int) {
	if v.opts.Check == nil {
		return
	}
	nd := &v.c.Nodes[i]
	check := v.opts.Check(nd)
	if check == nil || len(nd.Input) == 0 {
		return
	}
	in := nd.Input
	if len(nd.InputMap) > 0 {
		in = make(map[string]any, len(nd.Input))
		for k, val := range nd.Input {
			if _, mapped := nd.InputMap[k]; !mapped {
				in[k] = val
			}
		}
	}
	for _, p := range check(in) {
		rule, sev := RuleInputCheck, SeverityError
		if p.Rule != "" {
			rule = p.Rule
		}
		if p.Warning {
			sev = SeverityWarning
		}
		v.nodeIssue(i, rule, sev, p.Field, p.Message)
		if p.Line > 0 {
			is := &v.issues[len(v.issues)-1].Issue
			is.Line, is.Column = p.Line, p.Column
		}
	}
}

// RuleConfigCheck: a node's own check of its config failed (an agent
// defined in its node names no model).
const RuleConfigCheck = "config_check"

// checkNodeConfig is the config_check rule for node i (and the rules its
// problems name).
func (v *validator) checkNodeConfig(i int) {
	if v.opts.NodeConfig == nil {
		return
	}
	nd := &v.c.Nodes[i]
	for _, p := range v.opts.NodeConfig(nd, v.opts.Credential) {
		rule, sev := RuleConfigCheck, SeverityError
		if p.Rule != "" {
			rule = p.Rule
		}
		if p.Warning {
			sev = SeverityWarning
		}
		v.nodeIssue(i, rule, sev, p.Field, fmt.Sprintf("node %s: %s", v.node(i), p.Message))
	}
}

// NodeSchemas returns the input and config schemas for a node, as the host
// declared them: a tool node's tool, a proc node's "proc" tool (its config
// holds the tool's fields), an agent node's agent. nil: none declared.
type NodeSchemas func(nd *Node) (input, config map[string]any)

// checkInputSchema is the input_schema rule for node i.
func (v *validator) checkInputSchema(i int) {
	if v.opts.Schemas == nil {
		return
	}
	nd := &v.c.Nodes[i]
	in, cfg := v.opts.Schemas(nd)
	report := func(ps []SchemaProblem) {
		for _, p := range ps {
			v.nodeIssue(i, RuleInputSchema, SeverityError, p.Path, p.String())
		}
	}
	if in != nil && (len(nd.Input) > 0 || len(nd.InputMap) > 0) {
		// With input or input_map set the tool receives exactly their
		// union, so a required field missing from both is known now.
		var skip map[string]bool
		if len(nd.InputMap) > 0 || (nd.Kind == KindProc && len(nd.Config) > 0) {
			skip = make(map[string]bool, len(nd.InputMap)+len(nd.Config))
			for k := range nd.InputMap {
				skip[k] = true
			}
			if nd.Kind == KindProc {
				for k := range nd.Config {
					skip[k] = true // config fills fields the input lacks
				}
			}
		}
		c := v.schemaChecker(skip, false, "input")
		c.check(in, NormalizeValue(nd.Input), 0)
		report(c.out)
	}
	if cfg != nil && len(nd.Config) > 0 {
		var skip map[string]bool
		if nd.Kind == KindProc {
			skip = procConfigSkip // invalid_proc_argv owns argv
		}
		c := v.schemaChecker(skip, true, "config")
		c.check(cfg, NormalizeValue(nd.Config), 0)
		report(c.out)
	}
}

var procConfigSkip = map[string]bool{"argv": true}

// schemaChecker readies the validator's one checker for a value: its
// buffers are reused from node to node (the rule runs on every save).
func (v *validator) schemaChecker(skip map[string]bool, noRequired bool, root string) *schemaChecker {
	c := &v.sc
	c.max, c.skip, c.noRequired, c.root = maxSchemaProblems, skip, noRequired, root
	c.out, c.at, c.keys = c.out[:0], c.at[:0], c.keys[:0]
	return c
}
