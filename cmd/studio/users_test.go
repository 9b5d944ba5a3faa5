package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/store/postgres/pgtest"
	"github.com/chainstudio/studio/store/sqlite"
)

func studioCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// `studio users add` prints the token once, alone on stdout; the database
// keeps its SHA-256 and never the token; the other actions never print it.
func TestUsersAddPrintsTheTokenOnce(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "u.db")
	code, out, errOut := studioCmd(t, "users", "add", "ann", "--role", "admin", "--db", db)
	if code != exitOK {
		t.Fatalf("add: %d %s", code, errOut)
	}
	token := strings.TrimSpace(out)
	if !regexp.MustCompile(`^stu_[0-9a-f]{64}$`).MatchString(token) || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout %q: want the token alone", out)
	}
	if !strings.Contains(errOut, "shown only this once") {
		t.Fatalf("stderr %q", errOut)
	}
	_, out2, _ := studioCmd(t, "users", "add", "bob", "--role", "viewer", "--db", db)
	if strings.TrimSpace(out2) == token {
		t.Fatal("two users got one token")
	}

	// The hash is stored, the token is not (in the database file or its WAL).
	sum := sha256.Sum256([]byte(token))
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.UserByTokenHash(context.Background(), sum[:])
	s.Close()
	if err != nil || u.Name != "ann" || u.Role != "admin" {
		t.Fatalf("by hash: %+v %v", u, err)
	}
	var raw []byte
	for _, f := range []string{db, db + "-wal"} {
		b, _ := os.ReadFile(f)
		raw = append(raw, b...)
	}
	if bytes.Contains(raw, []byte(token)) || bytes.Contains(raw, []byte(token[4:])) {
		t.Fatal("the database holds the token")
	}
	if !bytes.Contains(raw, []byte(hex.EncodeToString(sum[:]))) {
		t.Fatal("the database does not hold the token's SHA-256")
	}

	code, out, _ = studioCmd(t, "users", "list", "--db", db)
	if code != exitOK || !regexp.MustCompile(`ann\s+admin`).MatchString(out) || !regexp.MustCompile(`bob\s+viewer`).MatchString(out) || strings.Contains(out, "stu_") {
		t.Fatalf("list: %d %s", code, out)
	}
	if code, out, _ = studioCmd(t, "users", "set-role", "bob", "--role", "approver", "--db", db); code != exitOK || out != "bob is now approver\n" {
		t.Fatalf("set-role: %d %q", code, out)
	}
	if code, _, _ = studioCmd(t, "users", "remove", "bob", "--db", db); code != exitOK {
		t.Fatalf("remove: %d", code)
	}
	if _, out, _ = studioCmd(t, "users", "list", "--db", db); strings.Contains(out, "bob") {
		t.Fatalf("bob still listed: %s", out)
	}
}

// Mistakes get a message naming what is wrong, exit 2 for usage and 1 for
// what the database refuses, and write nothing.
func TestUsersMistakes(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "u.db")
	if code, _, e := studioCmd(t, "users", "add", "ann", "--role", "admin", "--db", db); code != 0 {
		t.Fatal(e)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"users"}, exitUsage, "missing the action"},
		{[]string{"users", "grant", "x"}, exitUsage, `unknown action "grant"`},
		{[]string{"users", "add"}, exitUsage, "missing NAME"},
		{[]string{"users", "add", "carl"}, exitUsage, "--role is required"},
		{[]string{"users", "add", "carl", "--role", "root"}, exitUsage, `role "root": want one of viewer, editor, approver, admin`},
		{[]string{"users", "add", "c d", "--role", "viewer"}, exitUsage, "letters, digits"},
		{[]string{"users", "add", "token", "--role", "admin"}, exitUsage, "reserved"},
		{[]string{"users", "add", "ann", "--role", "viewer"}, exitFailed, `user "ann" already exists`},
		{[]string{"users", "remove", "zed"}, exitFailed, `no user named "zed"`},
		{[]string{"users", "set-role", "zed", "--role", "viewer"}, exitFailed, `no user named "zed"`},
	} {
		code, out, errOut := studioCmd(t, append(tc.args, "--db", db)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
	if _, out, _ := studioCmd(t, "users", "list", "--db", db); strings.Count(out, "\n") != 2 {
		t.Fatalf("a refused command wrote: %s", out)
	}
}

// Off loopback, users without an admin are not enough: serve refuses and
// says how to add one; with an admin user (and no --token) it starts.
func TestServeOffLoopbackNeedsAnAdmin(t *testing.T) {
	t.Setenv("STUDIO_TOKEN", "")
	db := filepath.Join(t.TempDir(), "s.db")
	if code, _, e := studioCmd(t, "users", "add", "ed", "--role", "editor", "--db", db); code != 0 {
		t.Fatal(e)
	}
	serve := func() (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var out, errb strings.Builder
		code := dispatch(ctx, []string{"serve", "--addr", "0.0.0.0:0", "--db", db, "--no-examples", "--agents", t.TempDir()}, &out, &errb)
		return code, errb.String()
	}
	code, errOut := serve()
	if code != exitUsage || !strings.Contains(errOut, "without an admin") || !strings.Contains(errOut, "studio users add NAME --role admin") {
		t.Fatalf("editor only: exit %d: %s", code, errOut)
	}
	if code, _, e := studioCmd(t, "users", "add", "ada", "--role", "admin", "--db", db); code != 0 {
		t.Fatal(e)
	}
	// It starts (nothing connects to it) and stops when the context ends.
	code, errOut = serve()
	if code != exitOK || !strings.Contains(errOut, "Chain Studio is running") {
		t.Fatalf("with an admin: exit %d: %s", code, errOut)
	}
}

// The same commands on PostgreSQL, where every serve of a cluster reads the
// users (skipped without a test server).
func TestUsersOnPostgres(t *testing.T) {
	dsn := pgtest.Schema(t)
	code, out, errOut := studioCmd(t, "users", "add", "ann", "--role", "admin", "--db", dsn)
	if code != exitOK || !regexp.MustCompile(`^stu_[0-9a-f]{64}\n$`).MatchString(out) {
		t.Fatalf("add: %d %q %s", code, out, errOut)
	}
	if code, _, errOut = studioCmd(t, "users", "add", "ann", "--role", "viewer", "--db", dsn); code != exitFailed || !strings.Contains(errOut, "already exists") {
		t.Fatalf("second ann: %d %s", code, errOut)
	}
	if code, out, _ = studioCmd(t, "users", "list", "--db", dsn); code != exitOK || !regexp.MustCompile(`ann\s+admin`).MatchString(out) {
		t.Fatalf("list: %d %s", code, out)
	}
	if code, _, _ = studioCmd(t, "users", "remove", "ann", "--db", dsn); code != exitOK {
		t.Fatalf("remove: %d", code)
	}
	if _, out, _ = studioCmd(t, "users", "list", "--db", dsn); !strings.Contains(out, "no users") {
		t.Fatalf("after remove: %s", out)
	}
}
