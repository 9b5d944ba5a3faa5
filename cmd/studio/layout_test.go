package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layoutRow is one row of the README's layout table.
type layoutRow struct {
	n    int    // line number in README.md
	name string // the folder, relative to the module root
	job  string
}

// readmeLayout returns the rows of the table under README.md's "## Layout"
// heading. Each row names one folder, in backticks, in its first cell.
func readmeLayout(t *testing.T, path string) []layoutRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []layoutRow
	in, header := false, 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Layout"
		case !in || !strings.HasPrefix(line, "|"):
		case header < 2: // the header and the |---| line under it
			header++
		default:
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) < 2 {
				t.Fatalf("README.md:%d: a layout row needs a folder and its job: %s", n, line)
			}
			name := strings.TrimSpace(cells[0])
			if strings.Count(name, "`") != 2 || !strings.HasPrefix(name, "`") || !strings.HasSuffix(name, "`") {
				t.Fatalf("README.md:%d: a layout row names one folder, in backticks: %s", n, line)
			}
			rows = append(rows, layoutRow{n: n, name: strings.Trim(name, "`"), job: strings.TrimSpace(strings.Join(cells[1:], "|"))})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("README.md has no layout table under \"## Layout\"")
	}
	return rows
}

// modulePackages returns the module's packages as folders relative to
// root, from `go list ./...`.
func modulePackages(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, filepath.ToSlash(rel))
	}
	return pkgs
}

// TestReadmeLayoutNamesEveryPackage: the README's layout table has one row
// per package of `go list ./...` and no row for a package that does not
// exist. A row may also name a folder that holds no Go package (the browser
// tests, the docs), as long as the folder is there.
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := modulePackages(t, root)
	if len(pkgs) < 5 {
		t.Fatalf("go list ./... found only %d packages", len(pkgs))
	}
	rows := readmeLayout(t, filepath.Join(root, "README.md"))

	seen := map[string]int{}
	for _, r := range rows {
		if first, ok := seen[r.name]; ok {
			t.Errorf("README.md:%d: `%s` has a row already (line %d)", r.n, r.name, first)
			continue
		}
		seen[r.name] = r.n
		if r.job == "" {
			t.Errorf("README.md:%d: `%s` needs a line saying its job", r.n, r.name)
		}
		if slices.Contains(pkgs, r.name) {
			continue
		}
		if err := nonGoFolder(root, r.name, pkgs); err != nil {
			t.Errorf("README.md:%d: the layout names `%s`, which is not a package of `go list ./...` (%v): rename or remove its row", r.n, r.name, err)
		}
	}
	for _, p := range pkgs {
		if _, ok := seen[p]; !ok {
			t.Errorf("README.md's layout has no row for package `%s`: add \"| `%s` | its job |\"", p, p)
		}
	}
}

// nonGoFolder says why name is not a folder without Go packages under
// root, or nil if it is one.
func nonGoFolder(root, name string, pkgs []string) error {
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return errors.New("no such folder")
	}
	if !fi.IsDir() {
		return errors.New("not a folder")
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p, name+"/") {
			return fmt.Errorf("it holds package %s: name the package instead", p)
		}
	}
	return nil
}
