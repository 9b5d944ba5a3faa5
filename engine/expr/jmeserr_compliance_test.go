package expr

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmespath/go-jmespath"
)

// The evaluator every run uses mirrors go-jmespath: over the JMESPath
// compliance suite (shipped with go-jmespath) it gives the same result
// wherever go-jmespath succeeds, and explains every invalid-type case in
// words.
func TestDiagMirrorsGoJMESPath(t *testing.T) {
	t.Parallel()
	same, typeErrs := 0, 0
	for _, cs := range complianceSuites(t) {
		f := cs.file
		for _, s := range cs.suites {
			for _, c := range s.Cases {
				if c.Error == "invalid-type" {
					if msg := explainJMESPath(c.Expression, s.Given); !strings.Contains(msg, "() needs") {
						t.Errorf("%s: %s: not explained: %q", filepath.Base(f), c.Expression, msg)
					}
					if _, err := Search(context.Background(), c.Expression, s.Given); err == nil || !strings.Contains(err.Error(), "() needs") {
						t.Errorf("budgeted: %s: %s: want a type error, got %v", filepath.Base(f), c.Expression, err)
					}
					typeErrs++
					continue
				}
				if c.Error != "" {
					continue
				}
				want, err := jmespath.Search(c.Expression, s.Given)
				if err != nil {
					continue
				}
				// The evaluator every run uses.
				got, err := Search(context.Background(), c.Expression, s.Given)
				wj, _ := json.Marshal(want)
				gj, _ := json.Marshal(got)
				if err != nil || string(wj) != string(gj) {
					t.Errorf("%s: %s:\n want %s\n  got %s %v", filepath.Base(f), c.Expression, wj, gj, err)
					continue
				}
				same++
			}
		}
	}
	if same < 500 || typeErrs < 30 {
		t.Errorf("only %d results and %d type errors compared: the suite moved?", same, typeErrs)
	}
}

// complianceSuite is one file of the JMESPath compliance suite.
type complianceSuite struct {
	file   string
	suites []struct {
		Given any
		Cases []struct{ Expression, Error string }
	}
}

// complianceSuites reads the JMESPath compliance suite go-jmespath ships,
// skipping tb when it is not at hand.
func complianceSuites(tb testing.TB) []complianceSuite {
	tb.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/jmespath/go-jmespath").Output()
	if err != nil {
		tb.Skipf("go-jmespath's source is not at hand: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(dir)), "compliance", "*.json"))
	if len(files) == 0 {
		tb.Skip("no compliance suite in go-jmespath's module")
	}
	out := make([]complianceSuite, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		cs := complianceSuite{file: f}
		if err := json.Unmarshal(b, &cs.suites); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		out = append(out, cs)
	}
	return out
}
