package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// makeTestRecipe reads the sub-targets `make test` runs from the
// Makefile's test recipe.
var makeTestRecipe = regexp.MustCompile(`\$\(MAKE\) --no-print-directory ([a-z0-9 -]+) \|\|`)

// TestMakeTestLooksUpNoPublicName: `make test` runs on machines that may not
// resolve public names, and must not try: the vulnerability check, which
// reads its database from vuln.go.dev, runs inside it only against a local
// copy named by GOVULNDB.
func TestMakeTestLooksUpNoPublicName(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mf, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := makeTestRecipe.FindStringSubmatch(string(mf))
	if m == nil {
		t.Fatal("Makefile: the test recipe's $(MAKE) line moved; update this test")
	}
	targets := strings.Fields(m[1])
	for _, tg := range targets {
		if tg == "vuln" {
			t.Fatalf("make test runs %q, which looks up vuln.go.dev; it must run vuln-local", targets)
		}
	}

	run := func(env ...string) string {
		cmd := exec.Command("make", "-n", "--no-print-directory", "vuln-local")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n vuln-local %v: %v\n%s", env, err, out)
		}
		return string(out)
	}
	// make -n prints recipes without running them, except recursive $(MAKE)
	// lines, which it runs with -n too: govulncheck itself never runs here.
	if out := run("GOVULNDB="); strings.Contains(out, "govulncheck") && !strings.Contains(out, "skipped") {
		t.Errorf("make vuln-local without GOVULNDB would run govulncheck:\n%s", out)
	}
	out := run("GOVULNDB=file:///nonexistent/vulndb")
	if !strings.Contains(out, `govulncheck -db "file:///nonexistent/vulndb"`) {
		t.Errorf("make vuln-local with a local GOVULNDB does not check against it:\n%s", out)
	}
	if strings.Contains(out, "vuln.go.dev\" ./...") {
		t.Errorf("make vuln-local with a local GOVULNDB still names vuln.go.dev:\n%s", out)
	}
}

// TestReadmeSaysFirstStartCompiles: a cold `go run ./cmd/studio` is silent
// for minutes while Go compiles; a new user must be told before they think it hung.
func TestReadmeSaysFirstStartCompiles(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "## The two commands")
	j := strings.Index(s, "## Screenshots")
	if i < 0 || j < i {
		t.Fatal("README.md: the two commands section moved; update this test")
	}
	section := s[i:j]
	if !strings.Contains(section, "compiles") || !strings.Contains(section, "minutes") {
		t.Errorf("README.md's two commands do not say the first start compiles, and for about how long:\n%s", section)
	}
}
