package web

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chainstudio/studio/runs"
)

// No handler waits on the event writer: the run service's reads
// (runs.Service.Events) see the events it has not stored yet, so none
// flushes it, and none takes a write failure that is the run's to report.
// The service shows web no Flush, and no handler here calls one on the run
// service or the store.
func TestHandlersDoNotFlushTheEventWriter(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"Flush", "FlushRun"} {
		if _, ok := reflect.TypeOf(&runs.Service{}).MethodByName(m); ok {
			t.Errorf("runs.Service has a %s method: handlers read with Events instead", m)
		}
	}
	// The check finds such a call.
	if got := writerFlushes(t, "x.go", "package web\nfunc f(s *Server) { _ = s.Runs.Flush(ctx); s.out.Flush() }\n"); len(got) != 1 {
		t.Fatalf("the check found %v in a handler that flushes the run service", got)
	}
	// Every door: web's own files and its packages'.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range writerFlushes(t, name, string(src)) {
			t.Errorf("%s waits on the event writer; read with s.Runs.Events", call)
		}
	}
}

// writerFlushes lists the calls in src of a Flush… method on the run
// service, the store or an event writer (the stream's own flushes of its
// connection are not these).
func writerFlushes(t *testing.T, name, src string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !strings.HasPrefix(sel.Sel.Name, "Flush") {
			return true
		}
		recv := src[fset.Position(sel.X.Pos()).Offset:fset.Position(sel.X.End()).Offset]
		for _, part := range strings.Split(recv, ".") {
			switch strings.ToLower(part) {
			case "runs", "db", "events", "svc":
				out = append(out, fset.Position(call.Pos()).String()+": "+recv+"."+sel.Sel.Name+"(…)")
				return true
			}
		}
		return true
	})
	return out
}
