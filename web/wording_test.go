package web

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// seedWords is the internal name of the specifications the engine follows: a
// user reads the plain rule (or a link to docs/chain-format.md), never it.
var seedWords = regexp.MustCompile(`(?i)seeds?\s+0\d`)

// TestNoSeedWordsForUsers fails when text a user reads names a specification
// by its internal number: templates, static files, the OpenAPI description,
// the user docs and examples, and every string literal of the Go code that
// builds pages, API answers, validation issues, errors and the CLI's help
// (comments are not read by users and are not checked).
func TestNoSeedWordsForUsers(t *testing.T) {
	t.Parallel()
	root := ".."
	var files []string
	for _, glob := range []string{"views/*.templ", "web/openapi.json", "docs/*.md", "docs/*.json", "examples/*.json", "README.md"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: no files (%v)", glob, err)
		}
		files = append(files, m...)
	}
	err := filepath.WalkDir(filepath.Join(root, "static"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range seedWords.FindAllIndex(b, -1) {
			line := 1 + strings.Count(string(b[:m[0]]), "\n")
			t.Errorf("%s:%d: %q: say the rule, or link docs/chain-format.md", f, line, b[m[0]:m[1]])
		}
	}

	var pkgs []string
	for _, dir := range []string{"cmd", "web", "views", "store", "engine"} {
		err = filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() != "testdata" && d.Name() != "migrations" {
				pkgs = append(pkgs, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for _, dir := range pkgs {
		gofiles, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range gofiles {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution) // no comments
			if err != nil {
				t.Fatal(err)
			}
			checked++
			ast.Inspect(af, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					s = lit.Value
				}
				if m := seedWords.FindString(s); m != "" {
					t.Errorf("%s: string %q says %q: a user reads it", fset.Position(lit.Pos()), s, m)
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("only %d Go files checked: the walk is wrong", checked)
	}
}
