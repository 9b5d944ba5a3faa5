package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binDir holds the studio binary the process tests share; TestMain removes
// it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "studio-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var studioBuild struct {
	once sync.Once
	path string
	err  error
}

// builtStudio builds the studio binary once per test process (the kill -9
// and README tests both run it) and returns its path.
func builtStudio(t testing.TB) string {
	t.Helper()
	studioBuild.once.Do(func() {
		bin := filepath.Join(binDir, "studio")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			studioBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		studioBuild.path = bin
	})
	if studioBuild.err != nil {
		t.Fatal(studioBuild.err)
	}
	return studioBuild.path
}
