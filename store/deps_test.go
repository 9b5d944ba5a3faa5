package store_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/chainstudio/studio"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath   string
	Deps         []string // every package it needs to build (tests excluded)
	TestImports  []string
	XTestImports []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = ".." // the module root
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func under(path, pkg string) bool { return path == pkg || strings.HasPrefix(path, pkg+"/") }

// TestOnlyTheWiringImportsTheSQLiteBackend: web, views and the run service
// work on store's records and interfaces; only cmd/studio (which opens the
// database) builds with store/sqlite. Among tests, web's need a real
// database too.
func TestOnlyTheWiringImportsTheSQLiteBackend(t *testing.T) {
	t.Parallel()
	sqlite := module + "/store/sqlite"
	for _, p := range listPackages(t) {
		if p.ImportPath == sqlite || under(p.ImportPath, sqlite) {
			continue
		}
		if slices.Contains(p.Deps, sqlite) && p.ImportPath != module+"/cmd/studio" {
			t.Errorf("%s depends on %s: take a store.Backend from cmd/studio instead", p.ImportPath, sqlite)
		}
		testOK := p.ImportPath == module+"/cmd/studio" || p.ImportPath == module+"/web"
		if !testOK && (slices.Contains(p.TestImports, sqlite) || slices.Contains(p.XTestImports, sqlite)) {
			t.Errorf("the tests of %s import %s: test against a store.Backend (store/storetest holds the contract)", p.ImportPath, sqlite)
		}
	}
}

// TestEngineImportsNoStudioLayer: the engine is pure Go; storage, HTTP and
// pages depend on it, never the reverse, and neither do its tests.
func TestEngineImportsNoStudioLayer(t *testing.T) {
	t.Parallel()
	above := []string{module + "/store", module + "/web", module + "/views", module + "/runs", module + "/cmd"}
	for _, p := range listPackages(t) {
		if !under(p.ImportPath, module+"/engine") {
			continue
		}
		for _, d := range slices.Concat(p.Deps, p.TestImports, p.XTestImports) {
			for _, a := range above {
				if under(d, a) {
					t.Errorf("%s depends on %s", p.ImportPath, d)
				}
			}
		}
	}
}

// TestEngineImportsNoneOfItsUsers: the A2E host, run inspection and document
// edits are built on the engine; the engine, and every package it is built
// from, needs none of them.
func TestEngineImportsNoneOfItsUsers(t *testing.T) {
	t.Parallel()
	users := []string{module + "/engine/a2e", module + "/engine/inspect", module + "/engine/edit"}
	found := false
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"/engine" {
			continue
		}
		found = true
		for _, d := range p.Deps {
			for _, u := range users {
				if under(d, u) {
					t.Errorf("%s depends on %s", p.ImportPath, d)
				}
			}
		}
	}
	if !found {
		t.Fatalf("go list did not list %s/engine", module)
	}
}

// TestOnlyTestsImportTestutil: internal/testutil is for tests; no package
// the studio is built from links it (nor the testing package it brings).
// Test-support packages (store/storetest) may.
func TestOnlyTestsImportTestutil(t *testing.T) {
	t.Parallel()
	testutil := module + "/internal/testutil"
	for _, p := range listPackages(t) {
		support := p.ImportPath == testutil || strings.HasSuffix(p.ImportPath, "test")
		if !support && slices.Contains(p.Deps, testutil) {
			t.Errorf("%s depends on %s: only _test.go files may import it", p.ImportPath, testutil)
		}
	}
}

// TestOnlyThePostgresWiringImportsRiver: River runs runs on PostgreSQL
// only; the store, the run service, web and the SQLite backend build
// without it, so the embedded studio never loads it.
func TestOnlyThePostgresWiringImportsRiver(t *testing.T) {
	t.Parallel()
	const river = "github.com/riverqueue/river"
	allowed := []string{module + "/runs/riverqueue", module + "/cmd/studio"}
	for _, p := range listPackages(t) {
		if slices.Contains(allowed, p.ImportPath) {
			continue
		}
		for _, d := range p.Deps {
			if under(d, river) {
				t.Errorf("%s depends on %s: only runs/riverqueue and the wiring in cmd/studio may", p.ImportPath, d)
				break
			}
		}
	}
}

// TestOnlyTheWiringAndTheRiverQueueImportThePostgresBackend: like the SQLite
// backend, store/postgres is opened by cmd/studio alone. The one other
// package that builds with it is runs/riverqueue: the River run queue is
// PostgreSQL's by nature, writing a run and its job in one of the backend's
// transactions and reading the backend's leases to take over a dead
// worker's runs. Nothing above it (runs, web, views) does.
func TestOnlyTheWiringAndTheRiverQueueImportThePostgresBackend(t *testing.T) {
	t.Parallel()
	postgres := module + "/store/postgres"
	allowed := []string{module + "/cmd/studio", module + "/runs/riverqueue"}
	for _, p := range listPackages(t) {
		if under(p.ImportPath, postgres) || slices.Contains(allowed, p.ImportPath) {
			continue
		}
		if slices.Contains(p.Deps, postgres) {
			t.Errorf("%s depends on %s: only cmd/studio and runs/riverqueue may; take a store.Backend instead", p.ImportPath, postgres)
		}
		if slices.Contains(p.TestImports, postgres) || slices.Contains(p.XTestImports, postgres) {
			t.Errorf("the tests of %s import %s: test against a store.Backend (store/storetest holds the contract)", p.ImportPath, postgres)
		}
	}
}

// TestStoreImportsNoLayerAbove: the store's packages (the records, both
// backends, what they share) sit under the run service, HTTP and pages and
// never reach up to them, nor to River: runs/riverqueue depends on
// store/postgres, never the reverse.
func TestStoreImportsNoLayerAbove(t *testing.T) {
	t.Parallel()
	above := []string{module + "/runs", module + "/web", module + "/views", module + "/cmd", "github.com/riverqueue/river"}
	for _, p := range listPackages(t) {
		if !under(p.ImportPath, module+"/store") {
			continue
		}
		for _, d := range p.Deps {
			for _, a := range above {
				if under(d, a) {
					t.Errorf("%s depends on %s", p.ImportPath, d)
				}
			}
		}
	}
}

// TestStoreLeavesComparisonToItsCallers: the store returns versions and runs;
// comparing them (engine/inspect) is done by the packages above it, so no
// store package builds with it.
func TestStoreLeavesComparisonToItsCallers(t *testing.T) {
	t.Parallel()
	inspect := module + "/engine/inspect"
	for _, p := range listPackages(t) {
		if !under(p.ImportPath, module+"/store") {
			continue
		}
		if slices.Contains(p.Deps, inspect) {
			t.Errorf("%s depends on %s: return the records and let the caller compare them", p.ImportPath, inspect)
		}
	}
}

// TestDoorsImportNotWeb: the doors (the JSON API, the pages, the live
// streams, the MCP server, the A2E transport) and what they share (ops,
// httpcore) are mounted by web and never import it, nor one another:
// web → door → ops → httpcore. A page and an API route that do the same
// thing call the same ops function, not each other.
func TestDoorsImportNotWeb(t *testing.T) {
	t.Parallel()
	web := module + "/web"
	doors := []string{web + "/api", web + "/pages", web + "/live", web + "/mcpserver", web + "/a2ehttp", web + "/ops", web + "/httpcore"}
	found := 0
	for _, p := range listPackages(t) {
		if !slices.Contains(doors, p.ImportPath) {
			continue
		}
		found++
		for _, d := range p.Deps {
			shared := d == web+"/httpcore" || (d == web+"/ops" && p.ImportPath != web+"/httpcore")
			if d == web || (under(d, web) && !shared) {
				t.Errorf("%s depends on %s: a door takes what it needs as interfaces, web mounts it", p.ImportPath, d)
			}
		}
	}
	if found != len(doors) {
		t.Fatalf("go list listed %d of the %d door packages", found, len(doors))
	}
}
