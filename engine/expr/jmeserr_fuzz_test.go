package expr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/jmespath/go-jmespath"
)

// mirrorFuzzBudget bounds the mirror's work per input: an expression that
// builds more is skipped before go-jmespath, which has no budget, runs it.
var mirrorFuzzBudget = Budget{MaxElements: 100_000, MaxBytes: 4 << 20}

// FuzzJMESPathMirror compares the two evaluators: on any expression
// go-jmespath compiles and any JSON input, the interpreter that words errors
// (and that every run evaluates with, budgeted) succeeds exactly when
// go-jmespath does, with the same result.
func FuzzJMESPathMirror(f *testing.F) {
	given := []byte(jmesTypeErrorData)
	for _, tc := range jmesTypeErrorCases {
		f.Add(tc.src, given)
	}
	for _, src := range fuzzSeeds {
		f.Add(src, given)
	}
	for _, cs := range complianceSuites(f) {
		for _, s := range cs.suites {
			doc, err := json.Marshal(s.Given)
			if err != nil {
				f.Fatal(err)
			}
			for _, c := range s.Cases {
				f.Add(c.Expression, doc)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src string, doc []byte) {
		if len(src) > 512 || len(doc) > 4096 {
			return
		}
		var data any
		if json.Unmarshal(doc, &data) != nil {
			return
		}
		if _, err := jmespath.Compile(src); err != nil {
			return
		}
		root, calls := compileDiag(src, src)
		if root == nil {
			t.Fatalf("%s: go-jmespath compiles it, the mirror does not", src)
		}
		ctx := WithBudget(context.Background(), mirrorFuzzBudget)
		got, gerr := evalBudgeted(ctx, src, root, calls, CloneJSON(data))
		var be *BudgetError
		if errors.As(gerr, &be) {
			return
		}
		if readsObjectOrder(root) && (wideObject(data) || buildsObjects(root)) {
			return // go-jmespath lists an object's values in Go's random map order
		}
		want, werr := goJMESPath(src, CloneJSON(data))
		switch {
		case werr != nil && gerr == nil:
			t.Fatalf("%s over %s: go-jmespath fails (%v), the mirror gives %s", src, doc, werr, jsonText(got))
		case werr == nil && gerr != nil:
			t.Fatalf("%s over %s: go-jmespath gives %s, the mirror fails: %v", src, doc, jsonText(want), gerr)
		case werr == nil && !sameJSON(got, want):
			t.Fatalf("%s over %s:\n go-jmespath %s\n mirror      %s", src, doc, jsonText(want), jsonText(got))
		}
	})
}

// readsObjectOrder reports whether the tree lists an object's keys or
// values (a value projection, keys(), values()), whose order go-jmespath
// leaves to Go's map iteration.
func readsObjectOrder(n *dnode) bool {
	return anyNode(n, func(n *dnode) bool {
		return n.typ == int(jmespath.ASTValueProjection) ||
			n.typ == int(jmespath.ASTFunctionExpression) && (n.str == "keys" || n.str == "values")
	})
}

// buildsObjects reports whether the tree makes objects of several keys
// ({a: a, b: b}, merge()).
func buildsObjects(n *dnode) bool {
	return anyNode(n, func(n *dnode) bool {
		return n.typ == int(jmespath.ASTMultiSelectHash) && len(n.kids) > 1 ||
			n.typ == int(jmespath.ASTFunctionExpression) && n.str == "merge"
	})
}

func anyNode(n *dnode, pred func(*dnode) bool) bool {
	if n == nil {
		return false
	}
	if pred(n) {
		return true
	}
	for _, k := range n.kids {
		if anyNode(k, pred) {
			return true
		}
	}
	return false
}

// wideObject reports whether v holds an object of more than one key.
func wideObject(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 1 {
			return true
		}
		for _, e := range x {
			if wideObject(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if wideObject(e) {
				return true
			}
		}
	}
	return false
}

// goJMESPath is go-jmespath's answer, a panic counting as a failure.
func goJMESPath(src string, data any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return jmespath.Search(src, data)
}

// sameJSON compares the mirror's result a with go-jmespath's b as JSON
// values (NaN, which to_number('NaN') gives, equals itself). An expression
// reference (`&a` outside a function) is each evaluator's own value, and
// both write as {}.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case expref:
		t := reflect.TypeOf(b)
		return t != nil && t.PkgPath() == "github.com/jmespath/go-jmespath" && t.Name() == "expRef"
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	}
	return a == b
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}
