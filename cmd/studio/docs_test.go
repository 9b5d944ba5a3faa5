package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The design document is read by the next engineer before the code, so it
// is held to the code here: its walk of a run names functions that exist,
// its length stays readable, and the anchors other documents link to are
// headings it has.

const (
	designDoc = "docs/design.md" // relative to the module root
	// designMaxLines bounds docs/design.md: past it, detail belongs in
	// api.md, chain-format.md or reliability.md, which it links to.
	designMaxLines = 900
	// runWalkHeading opens the section whose names TestDesignRunWalkNamesExist checks.
	runWalkHeading = "## The walk of a run"
)

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestDesignDocLength: docs/design.md stays at most designMaxLines lines.
func TestDesignDocLength(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), designDoc))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > designMaxLines {
		t.Errorf("%s has %d lines, over %d: cut repetition, or move detail to docs/api.md, docs/chain-format.md or docs/reliability.md and link to it", designDoc, n, designMaxLines)
	}
}

// TestDesignRunWalkNamesExist: every Go name the run walk writes in
// backticks as `pkg.Name`, `pkg.Type.Member`, `(*pkg.Type).Method` or
// `(*Type).Method` is declared in the module's source (a function, type,
// variable or constant; a method, interface method or struct field of the
// type). A rename or a move then fails here instead of leaving the walk
// describing code that is gone.
func TestDesignRunWalkNamesExist(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	walk := markdownSection(t, filepath.Join(root, designDoc), runWalkHeading)
	refs := goRefs(walk)
	if len(refs) < 20 {
		t.Fatalf("%s %q names only %d Go identifiers in backticks; the walk names the functions a run passes through", designDoc, runWalkHeading, len(refs))
	}
	decls := moduleDecls(t, root)
	for _, r := range refs {
		if err := decls.check(r); err != nil {
			t.Errorf("%s, %q: `%s`: %v", designDoc, runWalkHeading, r.text, err)
		}
	}
}

// TestDesignAnchorsLinkedFromDocs: every design.md#anchor that the README
// or a document links to (design.md's own #anchor links too) is a heading
// of design.md.
func TestDesignAnchorsLinkedFromDocs(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	anchors := headingAnchors(t, filepath.Join(root, designDoc))
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("docs/*.md: no files (%v)", err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`design\.md#([A-Za-z0-9_-]+)`)
	self := regexp.MustCompile(`\]\(#([A-Za-z0-9_-]+)\)`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ms := link.FindAllSubmatchIndex(b, -1)
		if filepath.Base(f) == "design.md" {
			ms = append(ms, self.FindAllSubmatchIndex(b, -1)...)
		}
		for _, m := range ms {
			checked++
			a := string(b[m[2]:m[3]])
			if !anchors[a] {
				line := 1 + strings.Count(string(b[:m[0]]), "\n")
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s:%d links design.md#%s, which is no heading of %s", rel, line, a, designDoc)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no link to a design.md anchor found in README.md or docs/*.md")
	}
}

// markdownSection returns the lines under heading (a "## " line) up to the
// next "## " heading, outside code fences.
func markdownSection(t *testing.T, path, heading string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	in, found, fence := false, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == heading
			found = found || in
			continue
		}
		if in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("%s has no heading %q", path, heading)
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives the headings of a
// markdown file: lower case, spaces to hyphens, punctuation other than
// hyphens and underscores dropped, a repeated anchor numbered -1, -2, ….
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var s strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				s.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				s.WriteRune(r)
			}
		}
		a := s.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}

// goRef is a Go name as a document writes it: pkg "" when unqualified
// ((*Type).Method), member "" for a package-level name.
type goRef struct {
	text              string
	pkg, name, member string
}

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// (*pkg.Type).Method, (pkg.Type).Method, (*Type).Method
	methodRef = regexp.MustCompile(`^\(\*?(?:([a-z][a-z0-9]*)\.)?([A-Za-z_]\w*)\)\.([A-Za-z_]\w*)$`)
	// pkg.Name, pkg.Type.Member
	qualRef = regexp.MustCompile(`^([a-z][a-z0-9]*)\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?$`)
	// file names written like pkg.Name: emitter.go, design.md
	fileExt = regexp.MustCompile(`\.(go|md|json|js|mjs|ts|sql|yaml|yml|templ|css|html|txt|key|lock)$`)
)

// goRefs lists the code spans of text that name Go declarations.
func goRefs(text string) []goRef {
	var refs []goRef
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		s := m[1]
		if fileExt.MatchString(s) {
			continue
		}
		if p := methodRef.FindStringSubmatch(s); p != nil {
			refs = append(refs, goRef{text: s, pkg: p[1], name: p[2], member: p[3]})
		} else if p := qualRef.FindStringSubmatch(s); p != nil {
			refs = append(refs, goRef{text: s, pkg: p[1], name: p[2], member: p[3]})
		}
	}
	return refs
}

// decls holds the module's declarations by package name (packages that
// share a name, every main, are merged): package-level names, and
// "Type.Member" for methods, interface methods and struct fields.
type decls map[string]map[string]bool

func (d decls) check(r goRef) error {
	key := r.name
	if r.member != "" {
		key += "." + r.member
	}
	if r.pkg == "" {
		for _, names := range d {
			if names[key] {
				return nil
			}
		}
		return fmt.Errorf("no package of the module declares %s", key)
	}
	names, ok := d[r.pkg]
	if !ok {
		return fmt.Errorf("the module has no package named %s", r.pkg)
	}
	if !names[key] {
		return fmt.Errorf("package %s declares no %s", r.pkg, key)
	}
	return nil
}

// moduleDecls parses every non-test Go file under root (testdata, vendored
// and node_modules folders aside).
func moduleDecls(t *testing.T, root string) decls {
	t.Helper()
	d := decls{}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			switch e.Name() {
			case ".git", "node_modules", "testdata", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		names := d[f.Name.Name]
		if names == nil {
			names = map[string]bool{}
			d[f.Name.Name] = names
		}
		addDecls(names, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("found only %d Go files under %s", files, root)
	}
	return d
}

func addDecls(names map[string]bool, f *ast.File) {
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil || len(decl.Recv.List) == 0 {
				names[decl.Name.Name] = true
				continue
			}
			if recv := receiverName(decl.Recv.List[0].Type); recv != "" {
				names[recv+"."+decl.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						names[n.Name] = true
					}
				case *ast.TypeSpec:
					names[spec.Name.Name] = true
					addMembers(names, spec.Name.Name, spec.Type)
				}
			}
		}
	}
}

// addMembers records a struct's fields (embedded ones by their type's name)
// and an interface's methods as "Type.Member".
func addMembers(names map[string]bool, typ string, x ast.Expr) {
	var fields *ast.FieldList
	switch x := x.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return
	}
	for _, fl := range fields.List {
		for _, n := range fl.Names {
			names[typ+"."+n.Name] = true
		}
		if len(fl.Names) == 0 {
			if n := receiverName(fl.Type); n != "" {
				names[typ+"."+n] = true
			}
		}
	}
}

// receiverName is the type name of a receiver or an embedded field: T, *T,
// T[P], pkg.T.
func receiverName(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.IndexListExpr:
		return receiverName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}
