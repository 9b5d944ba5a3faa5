package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// The sandbox's per-run flags are checked, each error naming its flag.
func TestCodeFlagsCheck(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--code-run-concurrency", "1", "--code-run-cpu-seconds", "0"}, ""},
		{[]string{"--code-run-concurrency", "0"}, "--code-run-concurrency must be 1 to 1024, got 0"},
		{[]string{"--code-run-cpu-seconds", "-1"}, "--code-run-cpu-seconds must be 0 (no budget) to 86400, got -1"},
		{[]string{"--code-run-cpu-seconds", "86401"}, "--code-run-cpu-seconds must be 0 (no budget) to 86400, got 86401"},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cf := registerCode(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := cf.check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
