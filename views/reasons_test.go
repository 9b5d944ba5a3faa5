package views

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"
)

// engineReasons reads the engine's source for its Reason* string constants,
// so that a reason added there is found without being listed here.
func engineReasons(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "../engine", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatalf("parse engine: %v", err)
	}
	out := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if !strings.HasPrefix(n.Name, "Reason") || i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							t.Errorf("engine.%s is not a string literal: the test cannot read it", n.Name)
							continue
						}
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatalf("engine.%s: %v", n.Name, err)
						}
						out[n.Name] = v
					}
				}
			}
		}
	}
	return out
}

func TestEveryEngineReasonHasText(t *testing.T) {
	reasons := engineReasons(t)
	if len(reasons) < 8 {
		t.Fatalf("found only %d Reason constants in engine: %v", len(reasons), reasons)
	}
	for name, v := range reasons {
		if reasonTexts[v] == "" {
			t.Errorf("engine.%s (%q) has no text in reasonTexts", name, v)
		}
	}
}

func TestReasonTextsReachTheScript(t *testing.T) {
	var m map[string]string
	if err := json.Unmarshal([]byte(reasonTextsJSON), &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != len(reasonTexts) || m["guard_failed"] != ReasonText("guard_failed") {
		t.Errorf("the JSON table differs from reasonTexts: %v", m)
	}
	if ReasonText("something_new") != "something_new" {
		t.Error("an unknown reason reads as itself")
	}
}
