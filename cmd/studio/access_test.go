package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Off loopback without a token the studio refuses to start (exit 2, naming
// --token and --insecure) before it listens anywhere; STUDIO_ADDR is held
// to the same rule.
func TestServeOffLoopbackNeedsToken(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--addr", "0.0.0.0:0"},
		{"--addr", "[::]:0"},
		{"serve", "--addr", ":0"},
		{"serve", "--addr", "192.0.2.1:0"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		db := filepath.Join(t.TempDir(), "s.db")
		var out, errb strings.Builder
		t.Setenv("STUDIO_TOKEN", "")
		code := dispatch(ctx, append(args, "--db", db, "--no-examples", "--agents", t.TempDir()), &out, &errb)
		cancel()
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, errb.String())
			continue
		}
		for _, w := range []string{"refusing to listen", "--token", "--insecure"} {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: stderr does not name %q: %s", args, w, errb.String())
			}
		}
	}
	t.Setenv("STUDIO_TOKEN", "")
	t.Setenv("STUDIO_ADDR", "0.0.0.0:0")
	var out, errb strings.Builder
	if code := dispatch(context.Background(), []string{"serve", "--db", filepath.Join(t.TempDir(), "s.db"), "--no-examples"}, &out, &errb); code != exitUsage {
		t.Errorf("STUDIO_ADDR=0.0.0.0:0: exit %d: %s", code, errb.String())
	}
}
