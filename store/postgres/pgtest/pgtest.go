// Package pgtest gives tests a throwaway PostgreSQL schema: the server is
// named by STUDIO_TEST_PG (default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable). When it cannot be
// reached the test is skipped, except under CI=true, where it fails: CI must
// never pass by skipping the PostgreSQL tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultDSN is the server the tests use when STUDIO_TEST_PG is unset:
// the one scripts/postgres.sh makes sure is running (make unit).
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// ServerDSN returns the DSN of the test server.
func ServerDSN() string {
	if v := os.Getenv("STUDIO_TEST_PG"); v != "" {
		return v
	}
	return DefaultDSN
}

var (
	reachOnce sync.Once
	reachErr  error
)

// Require skips (fails under CI=true) t when the test server cannot be
// reached, and returns its DSN.
func Require(t testing.TB) string {
	t.Helper()
	dsn := ServerDSN()
	reachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			reachErr = err
			return
		}
		reachErr = c.Ping(ctx)
		c.Close(ctx)
	})
	if reachErr != nil {
		msg := "PostgreSQL at STUDIO_TEST_PG (default " + DefaultDSN + ") cannot be reached: " + reachErr.Error() +
			"; run scripts/postgres.sh (make unit does) or set STUDIO_TEST_PG"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dsn
}

// Schema creates an empty schema on the test server for t, dropped with
// everything in it when t ends, and returns a DSN whose search_path is that
// schema: each test gets its own tables, so tests run in parallel.
func Schema(t testing.TB) string {
	t.Helper()
	dsn := Require(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "studio_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE SCHEMA `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP SCHEMA `+name+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}
