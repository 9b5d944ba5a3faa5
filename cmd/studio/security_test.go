package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A proc node may set only the environment variables the operator named with
// --allow-proc-env; loader variables are refused even then, at start-up for
// the flag and at run time (as the node's error, naming node and variable)
// for the chain.
func TestRunProcEnvNeedsAllowProcEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := func(name, val string) string {
		p := filepath.Join(dir, "proc-"+name+".json")
		doc := `{"name":"penv","nodes":[{"node_id":"greet","kind":"tool","name":"proc",` +
			`"input":{"argv":["sh","-c","echo $` + name + `"],"env":{"` + name + `":"` + val + `"}}}],"edges":[]}`
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, out, errb := studio(t, "run", doc("GREETING", "hello"), "--allow-proc", "sh")
	if code != exitFailed || !strings.Contains(out+errb, "greet") || !strings.Contains(out+errb, `variable "GREETING" is not allowed: start the studio with --allow-proc-env GREETING`) {
		t.Fatalf("without --allow-proc-env: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = studio(t, "run", doc("GREETING", "hello"), "--allow-proc", "sh", "--allow-proc-env", "GREETING")
	if code != exitOK || !strings.Contains(out, "hello") {
		t.Fatalf("with --allow-proc-env GREETING: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = studio(t, "run", doc("LD_PRELOAD", "./evil.so"), "--allow-proc", "sh")
	if code != exitFailed || !strings.Contains(out+errb, "greet") || !strings.Contains(out+errb, `variable "LD_PRELOAD" is always refused: it is a dynamic-loader variable`) {
		t.Fatalf("LD_PRELOAD: exit %d\n%s%s", code, out, errb)
	}
	for _, cmd := range []string{"run", "serve"} {
		code, _, errb = studio(t, cmd, doc("LD_PRELOAD", "x"), "--allow-proc-env", "LD_PRELOAD")
		if code != exitUsage || !strings.Contains(errb, "LD_PRELOAD is never allowed") {
			t.Fatalf("%s --allow-proc-env LD_PRELOAD: exit %d, %s", cmd, code, errb)
		}
	}
}

// A token short enough to guess, and a --public-url that names no host, stop
// the studio before it opens its database or listens.
func TestServeRefusesShortTokenAndBadPublicURL(t *testing.T) {
	t.Setenv("STUDIO_TOKEN", "")
	db := filepath.Join(t.TempDir(), "s.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--token", "short-token"}, "the token (--token or STUDIO_TOKEN) has 11 characters; use at least 16"},
		{[]string{"--token", "0123456789abcdef", "--public-url", "studio.example.org"}, `--public-url "studio.example.org": want an http:// or https:// URL with a host`},
		{[]string{"--public-url", "ftp://x"}, "--public-url"},
	} {
		code, errb := serveBriefly(t, append([]string{"serve", "--db", db, "--no-examples", "--agents", t.TempDir(), "--addr", "127.0.0.1:0"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errb, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errb, tc.want)
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("%v: the database was created before the refusal", tc.args)
		}
	}
	t.Setenv("STUDIO_TOKEN", "tiny")
	if code, errb := serveBriefly(t, "serve", "--db", db, "--no-examples", "--addr", "127.0.0.1:0"); code != exitUsage || !strings.Contains(errb, "has 4 characters") {
		t.Errorf("STUDIO_TOKEN=tiny: exit %d, %s", code, errb)
	}
}

// serveBriefly runs the CLI with a deadline, so that a studio that starts
// when it should have refused ends the test instead of serving on.
func serveBriefly(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := dispatch(ctx, args, &out, &errb)
	return code, errb.String()
}
