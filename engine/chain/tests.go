package chain

// Tests that live with the chain (docs/chain-format.md, "Tests"): the test
// case model, its strict decoding and its validation rules. The runner is
// engine/chaintest; the engine itself never runs a chain's tests and a
// broken test never stops the chain from running (Compile skips them).

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/internal/clip"
)

// MaxTests bounds the test cases one chain document may carry.
const MaxTests = 1000

// maxTestNameBytes bounds a test's name (it is shown in every report).
const maxTestNameBytes = 256

// Test is one test case of a chain: a run input, mocked node outputs and
// what the run must do.
type Test struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Input       map[string]any `json:"input,omitempty"`
	// Mocks maps a node id to the output the node gives instead of running:
	// its tool, program, sub-chain or agent is never called.
	Mocks map[string]any `json:"mocks,omitempty"`
	// Errors maps a node id to the error message it fails with instead of
	// running (to test on_error paths); nothing is called either.
	Errors map[string]string `json:"errors,omitempty"`
	Assert TestAssert        `json:"assert"`
}

// TestAssert is what a test run must do.
type TestAssert struct {
	Status RunStatus `json:"status,omitempty"`  // the final run status
	Ran    []string  `json:"ran,omitempty"`     // nodes that must run
	NotRan []string  `json:"not_ran,omitempty"` // nodes that must not run (skipped or never reached)
	Expect []Expect  `json:"expect,omitempty"`
}

// Expect is one JMESPath assertion over the test run. Exactly one form:
// Path with Equals (the value at path equals Equals, compared as JSON), or
// That (a boolean expression that must be true).
type Expect struct {
	Path   string          `json:"path,omitempty"`
	Equals json.RawMessage `json:"equals,omitempty"`
	That   string          `json:"that,omitempty"`
	// Node names the node the assertion concerns, for reports and the
	// designer's markers; default: the first node the expression reads.
	Node string `json:"node,omitempty"`
}

// Expression returns the assertion's expression source (Path or That).
func (x *Expect) Expression() string {
	if x.Path != "" {
		return x.Path
	}
	return x.That
}

// TestField is the place of a test's field in issues and reports:
// `tests[1] "happy path".mocks.fetch`.
func TestField(i int, name, field string) string {
	p := fmt.Sprintf("tests[%d]", i)
	if name != "" {
		p += " " + strconv.Quote(clip.String(name, 64))
	}
	if field != "" {
		p += "." + field
	}
	return p
}

// RunStatuses a test may assert (a test run is never queued or running).
var testStatuses = []RunStatus{StatusCompleted, StatusPartial, StatusFailed, StatusPaused, StatusTimedOut, StatusCancelled}

// decodeTests decodes the tests array strictly, each test named in errors.
func decodeTests(raws []json.RawMessage) ([]Test, error) {
	if len(raws) > MaxTests {
		return nil, &DecodeError{Path: "tests", Rule: DecodeOverLimit, Msg: fmt.Sprintf("%d tests, over the limit of %d", len(raws), MaxTests)}
	}
	if raws == nil {
		return nil, nil
	}
	out := make([]Test, 0, len(raws))
	for i, raw := range raws {
		var name struct {
			Name any `json:"name"`
		}
		_ = json.Unmarshal(raw, &name) // only to name the test in errors
		s, _ := name.Name.(string)
		path := TestField(i, s, "")
		var t Test
		if err := strictUnmarshalAt(path, raw, &t); err != nil {
			return nil, err
		}
		if len(t.Name) > maxTestNameBytes {
			return nil, &DecodeError{Path: path + ".name", Rule: DecodeOverLimit, Msg: fmt.Sprintf("is %d bytes, over the limit of %d", len(t.Name), maxTestNameBytes)}
		}
		t.Input = NormalizeMap(t.Input)
		for k, v := range t.Mocks {
			t.Mocks[k] = NormalizeValue(v)
		}
		out = append(out, t)
	}
	return out, nil
}

// Test validation rules (see the table in validate.go).
const (
	RuleTestName            = "test_name"             // a test has no name, or shares it with another
	RuleTestUnknownNode     = "test_unknown_node"     // mocks, ran, not_ran or expect[i].node name no node
	RuleTestMockRouter      = "test_mock_router"      // a mock for a branch or condition node (its output is its input)
	RuleTestMockShape       = "test_mock_shape"       // mock data does not fit the tool's known output
	RuleTestAssertionSyntax = "test_assertion_syntax" // an expect expression does not parse
	RuleTestAssertionForm   = "test_assertion_form"   // an expect entry is not exactly one of {path, equals} or {that}
	RuleTestStatus          = "test_status"           // assert.status is not a status a run can end with
	RuleTestRanConflict     = "test_ran_conflict"     // a node is in both ran and not_ran
	RuleTestMockConflict    = "test_mock_conflict"    // a node is in both mocks and errors
)

// checkTests validates the chain's test cases (group 3, one index per test).
func (v *validator) checkTests() {
	seen := map[string]int{}
	for i := range v.c.Tests {
		t := &v.c.Tests[i]
		issue := func(rule, nodeID, field, msg string) {
			v.add(3, i, rule, SeverityError, nodeID, "", TestField(i, t.Name, field), msg, nil)
		}
		switch j, dup := seen[t.Name]; {
		case strings.TrimSpace(t.Name) == "":
			issue(RuleTestName, "", "name", "a test needs a name")
		case dup:
			issue(RuleTestName, "", "name", fmt.Sprintf("duplicate test name %q (also tests[%d])", t.Name, j))
		default:
			seen[t.Name] = i
		}
		for _, id := range sortedKeys(t.Mocks) {
			j, ok := v.g.Idx[id]
			if !ok {
				issue(RuleTestUnknownNode, "", "mocks."+id, fmt.Sprintf("no node %q", id))
				continue
			}
			nd := &v.c.Nodes[j]
			switch nd.Kind {
			case KindBranch, KindCondition:
				issue(RuleTestMockRouter, id, "mocks."+id, fmt.Sprintf("node %q is a %s: it passes its input on and only decides the route; mock the node before it instead", id, nd.Kind))
				continue
			}
			if schema, what := v.outputSchema(nd); schema != nil {
				if err := CheckShape(schema, t.Mocks[id], ""); err != nil {
					issue(RuleTestMockShape, id, "mocks."+id, fmt.Sprintf("does not fit the output of %s: %v", what, err))
				}
			}
		}
		for _, id := range sortedKeys(t.Errors) {
			j, ok := v.g.Idx[id]
			switch {
			case !ok:
				issue(RuleTestUnknownNode, "", "errors."+id, fmt.Sprintf("no node %q", id))
			case v.c.Nodes[j].Kind == KindBranch || v.c.Nodes[j].Kind == KindCondition:
				issue(RuleTestMockRouter, id, "errors."+id, fmt.Sprintf("node %q is a %s: it only decides the route; make the node before it fail instead", id, v.c.Nodes[j].Kind))
			default:
				if _, both := t.Mocks[id]; both {
					issue(RuleTestMockConflict, id, "errors."+id, fmt.Sprintf("node %q has a mock too: give it an output or an error, not both", id))
				}
			}
		}
		ran := map[string]bool{}
		for k, id := range t.Assert.Ran {
			ran[id] = true
			if _, ok := v.g.Idx[id]; !ok {
				issue(RuleTestUnknownNode, "", fmt.Sprintf("assert.ran[%d]", k), fmt.Sprintf("no node %q", id))
			}
		}
		for k, id := range t.Assert.NotRan {
			field := fmt.Sprintf("assert.not_ran[%d]", k)
			if _, ok := v.g.Idx[id]; !ok {
				issue(RuleTestUnknownNode, "", field, fmt.Sprintf("no node %q", id))
			} else if ran[id] {
				issue(RuleTestRanConflict, id, field, fmt.Sprintf("node %q is also in assert.ran: it cannot both run and not run", id))
			}
		}
		if s := t.Assert.Status; s != "" && !validTestStatus(s) {
			issue(RuleTestStatus, "", "assert.status", fmt.Sprintf("unknown status %q (one of %s)", s, statusList()))
		}
		for k := range t.Assert.Expect {
			x := &t.Assert.Expect[k]
			field := fmt.Sprintf("assert.expect[%d]", k)
			switch {
			case x.Path != "" && x.That != "":
				issue(RuleTestAssertionForm, "", field, "has both path and that: use path with equals, or that alone")
				continue
			case x.Path == "" && x.That == "":
				issue(RuleTestAssertionForm, "", field, `needs "path" with "equals", or "that" (a boolean expression)`)
				continue
			case x.Path != "" && len(x.Equals) == 0:
				issue(RuleTestAssertionForm, "", field+".equals", `is required with "path" (the value the path must give; null is written null)`)
			case x.That != "" && len(x.Equals) != 0:
				issue(RuleTestAssertionForm, "", field+".equals", `goes with "path"; "that" is a boolean expression on its own`)
			}
			sub := "that"
			if x.Path != "" {
				sub = "path"
			}
			if _, err := expr.ParseWith(x.Expression(), expr.Limits{MaxLength: v.lim.MaxExpressionLength}); err != nil {
				is := Issue{Rule: RuleTestAssertionSyntax, Severity: SeverityError, Field: TestField(i, t.Name, field+"."+sub), Message: err.Error()}
				if se, ok := err.(*expr.SyntaxError); ok {
					pos := se.Pos
					is.Pos = &pos
					is.Line, is.Column = ExprPlace(x.Expression(), pos)
					is.Message = se.Msg
				}
				v.issues = append(v.issues, keyed{Issue: is, group: 3, index: i})
			}
			if x.Node != "" {
				if _, ok := v.g.Idx[x.Node]; !ok {
					issue(RuleTestUnknownNode, "", field+".node", fmt.Sprintf("no node %q", x.Node))
				}
			}
		}
	}
}

// outputSchema is the known shape of a node's output, and what it is.
func (v *validator) outputSchema(nd *Node) (map[string]any, string) {
	if v.opts.ToolOutput == nil {
		return nil, ""
	}
	switch nd.Kind {
	case KindTool:
		if s, ok := v.opts.ToolOutput(nd.Name); ok {
			return s, fmt.Sprintf("tool %q", nd.Name)
		}
	case KindProc:
		if s, ok := v.opts.ToolOutput("proc"); ok {
			return s, "a proc node"
		}
	}
	return nil, ""
}

func validTestStatus(s RunStatus) bool {
	for _, x := range testStatuses {
		if x == s {
			return true
		}
	}
	return false
}

func statusList() string {
	s := make([]string, len(testStatuses))
	for i, x := range testStatuses {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// maxShapeDepth bounds how deep CheckShape follows a schema.
const maxShapeDepth = 32

// CheckShape checks value v against a small JSON-Schema subset (type,
// properties, required, items), the form tools describe their output in.
// Keys the schema does not name are allowed. path names the place in errors.
func CheckShape(schema map[string]any, v any, path string) error {
	return checkShape(schema, NormalizeValue(v), path, 0)
}

func checkShape(schema map[string]any, v any, path string, depth int) error {
	if depth > maxShapeDepth || schema == nil {
		return nil
	}
	where := func() string {
		if path == "" {
			return "the output"
		}
		return strconv.Quote(path)
	}
	if t, ok := schema["type"].(string); ok && t != "any" && !shapeTypeOK(t, v) {
		return fmt.Errorf("%s is %s, want %s", where(), typeName(v), withArticle(t))
	}
	m, isObj := v.(map[string]any)
	if isObj {
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if k, ok := r.(string); ok {
					if _, has := m[k]; !has {
						return fmt.Errorf("%s lacks the field %q", where(), k)
					}
				}
			}
		}
		if req, ok := schema["required"].([]string); ok {
			for _, k := range req {
				if _, has := m[k]; !has {
					return fmt.Errorf("%s lacks the field %q", where(), k)
				}
			}
		}
		if props, ok := schema["properties"].(map[string]any); ok {
			for _, k := range sortedKeys(props) {
				sub, ok := props[k].(map[string]any)
				fv, has := m[k]
				if !ok || !has {
					continue
				}
				if err := checkShape(sub, fv, joinPath(path, k), depth+1); err != nil {
					return err
				}
			}
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		if l, ok := v.([]any); ok {
			for k, it := range l {
				if err := checkShape(items, it, fmt.Sprintf("%s[%d]", path, k), depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func shapeTypeOK(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return true
}

// EqualJSON reports whether two JSON values are equal (numbers by value,
// objects by keys, lists in order).
func EqualJSON(a, b any) bool {
	return reflect.DeepEqual(NormalizeValue(a), NormalizeValue(b))
}
