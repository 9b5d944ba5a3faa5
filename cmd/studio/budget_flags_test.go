package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestServeRefusesNonPositiveBudgets(t *testing.T) {
	for _, flag := range []string{"--expr-max-elements", "--expr-max-bytes", "--template-max-steps", "--template-max-bytes"} {
		var out, errb bytes.Buffer
		code := cmdServe(context.Background(), []string{flag, "0", "--db", t.TempDir() + "/x.db"}, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "must be positive") {
			t.Errorf("%s 0: exit %d, %q", flag, code, errb.String())
		}
	}
}
