package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlite"
)

// storeBigRun records a completed run of n events of size bytes each in
// the SQLite database at path (before a studio opens it).
func storeBigRun(t *testing.T, path, id string, n, size int) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainName: "big", Kind: "run", Status: chain.StatusCompleted, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	out := strings.Repeat("y", size)
	for i := 1; i <= n; i++ {
		if err := db.AppendEvents(ctx, []engine.Event{{RunID: id, Seq: int64(i), NodeID: "n" + strconv.Itoa(i), Phase: engine.PhaseDone, Time: time.Now(), Output: out}}); err != nil {
			t.Fatal(err)
		}
	}
}

// metricValue reads one sample of the studio's /metrics ("" labels: the
// sample without any).
func (p *studioProc) metricValue(t *testing.T, name, labels string) float64 {
	t.Helper()
	res, err := http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	sample := name
	if labels != "" {
		sample += "{" + labels + "}"
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /metrics:\n%s", sample, grepLines(string(b), name))
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// studio serve --stream-write-timeout cuts event streams nobody reads:
// they are counted open while they stall (a finished run's replay too),
// then closed within the timeout, with nothing left buffered.
func TestServeCutsStalledEventStreams(t *testing.T) {
	t.Parallel()
	bin := builtStudio(t)
	db := filepath.Join(t.TempDir(), "s.db")
	storeBigRun(t, db, "big", 20, 1<<20)
	// 5 s: short enough to watch the cut, long enough that the reading
	// client below takes each 1 MiB frame in time on a 2-core machine
	// loaded by every package's tests under the race detector.
	const writeTimeout = 5 * time.Second
	p := startStudio(t, bin, db, "--stream-write-timeout", writeTimeout.String())
	defer p.stop(t)

	addr := strings.TrimPrefix(p.url, "http://")
	const n = 5
	stalled := testutil.OpenStalled(t, addr, n, testutil.GetRequest(addr, "/v1/runs/big/events", "Accept: text/event-stream"))
	// Within the timeout and a shared machine's slack.
	testutil.Eventually(t, writeTimeout+20*time.Second, func() error {
		open := p.metricValue(t, "studio_stream_connections", `kind="run_events"`)
		cut := p.metricValue(t, "studio_stream_write_timeouts_total", `kind="run_events"`) + p.metricValue(t, "studio_stream_budget_timeouts_total", `kind="run_events"`)
		if cut < n || open != 0 {
			return fmt.Errorf("%v of %d stalled streams cut, %v open", cut, n, open)
		}
		return nil
	})
	if b := p.metricValue(t, "studio_stream_buffered_bytes", ""); b != 0 {
		t.Fatalf("%v bytes still buffered", b)
	}
	// A reader that takes it all still gets the whole run.
	if evs := p.events(t, "big"); len(evs) != 20 {
		t.Fatalf("a reading client got %d events, want 20", len(evs))
	}
	stalled.Close()
}

// The stream bounds must be positive, and one connection's buffer no larger
// than all of them together.
func TestServeRefusesBadStreamBounds(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "x.db")
	for _, args := range [][]string{
		{"--stream-write-timeout", "0"},
		{"--stream-buffer-bytes", "0"},
		{"--stream-buffer-total", "-1"},
		{"--stream-buffer-bytes", "2000", "--stream-buffer-total", "1000"},
	} {
		var out, errb bytes.Buffer
		code := cmdServe(context.Background(), append(args, "--db", db), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), args[0]) {
			t.Errorf("serve %v: exit %d %q", args, code, errb.String())
		}
	}
}
