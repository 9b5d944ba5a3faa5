package pgtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRequireProbe is run by TestUnreachable in a child process.
func TestRequireProbe(t *testing.T) {
	if os.Getenv("PGTEST_PROBE") != "1" {
		t.Skip("run by TestUnreachable")
	}
	Require(t)
}

// An unreachable server skips the PostgreSQL tests with a message saying
// why, except under CI=true, where they fail.
func TestUnreachable(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestRequireProbe$", "-test.v")
		cmd.Env = append(os.Environ(), "PGTEST_PROBE=1", "CI="+ci,
			"STUDIO_TEST_PG=postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
		out, err := cmd.CombinedOutput()
		s := string(out)
		if !strings.Contains(s, "cannot be reached") || !strings.Contains(s, "scripts/postgres.sh") {
			t.Errorf("CI=%q: no reason given:\n%s", ci, s)
		}
		if ci == "true" && (err == nil || !strings.Contains(s, "--- FAIL: TestRequireProbe")) {
			t.Errorf("CI=true: the test did not fail:\n%s", s)
		}
		if ci == "" && (err != nil || !strings.Contains(s, "--- SKIP: TestRequireProbe")) {
			t.Errorf("outside CI: the test did not skip:\n%s", s)
		}
	}
}
