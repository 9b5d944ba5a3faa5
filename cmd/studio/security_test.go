package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A proc node may set only the environment variables the operator named with
// --allow-proc-env; loader variables are refused even then, at start-up for
// the flag and at run time (as the node's error, naming node and variable)
// for the chain.
func TestRunProcEnvNeedsAllowProcEnv(t *testing.T) {
	dir := t.TempDir()
	chain := func(name, val string) string {
		p := filepath.Join(dir, "proc-"+name+".json")
		doc := `{"name":"penv","nodes":[{"node_id":"greet","kind":"tool","name":"proc",` +
			`"input":{"argv":["sh","-c","echo $` + name + `"],"env":{"` + name + `":"` + val + `"}}}],"edges":[]}`
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, out, errb := studio(t, "run", chain("GREETING", "hello"), "--allow-proc", "sh")
	if code != exitFailed || !strings.Contains(out+errb, "greet") || !strings.Contains(out+errb, `variable "GREETING" is not allowed: start the studio with --allow-proc-env GREETING`) {
		t.Fatalf("without --allow-proc-env: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = studio(t, "run", chain("GREETING", "hello"), "--allow-proc", "sh", "--allow-proc-env", "GREETING")
	if code != exitOK || !strings.Contains(out, "hello") {
		t.Fatalf("with --allow-proc-env GREETING: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = studio(t, "run", chain("LD_PRELOAD", "./evil.so"), "--allow-proc", "sh")
	if code != exitFailed || !strings.Contains(out+errb, "greet") || !strings.Contains(out+errb, `variable "LD_PRELOAD" is always refused: it is a dynamic-loader variable`) {
		t.Fatalf("LD_PRELOAD: exit %d\n%s%s", code, out, errb)
	}
	for _, cmd := range []string{"run", "serve"} {
		code, _, errb = studio(t, cmd, chain("LD_PRELOAD", "x"), "--allow-proc-env", "LD_PRELOAD")
		if code != exitUsage || !strings.Contains(errb, "LD_PRELOAD is never allowed") {
			t.Fatalf("%s --allow-proc-env LD_PRELOAD: exit %d, %s", cmd, code, errb)
		}
	}
}
