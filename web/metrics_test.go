package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
)

// metricValue returns the value of the sample `name{labels}` in a Prometheus
// text exposition (labels exactly as printed, "" for none), or -1.
func metricValue(t testing.TB, text, sample string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

func TestMetricsNeedTheTokenAndCountRuns(t *testing.T) {
	t.Parallel()
	const token = "metrics-token"
	_, ts := newTestServerWith(t, Config{Token: token}, testRegistry())
	auth := []string{"Authorization", "Bearer " + token}

	r := do(t, ts, "GET", "/metrics", nil)
	wantStatus(t, r, http.StatusUnauthorized)
	if r.errCode(t) != "unauthorized" {
		t.Fatalf("%s", r.body)
	}

	r = do(t, ts, "POST", "/v1/chains", fmt.Sprintf(linearDoc, "m"), auth...)
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":1}}`, auth...)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	testutil.Eventually(t, 10*time.Second, func() error {
		m := do(t, ts, "GET", "/v1/runs/"+run, nil, auth...).json(t)
		if m["status"] != "completed" || m["active"] != false {
			return fmt.Errorf("run %s is %v (active %v), want completed", run, m["status"], m["active"])
		}
		return nil
	})

	r = do(t, ts, "GET", "/metrics", nil, auth...)
	wantStatus(t, r, http.StatusOK)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("content type %q", ct)
	}
	text := string(r.body)
	for sample, want := range map[string]float64{
		`studio_runs_started_total{kind="run"}`:            1,
		`studio_runs_finished_total{status="completed"}`:   1,
		`studio_node_executions_total{phase="done"}`:       2,
		`studio_node_duration_seconds_count{phase="done"}`: 2,
		`studio_sse_watchers`:                              0,
		`studio_runs_active`:                               0,
		`studio_events_dropped_total`:                      0,
	} {
		if got := metricValue(t, text, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
	for _, sample := range []string{
		`studio_http_request_duration_seconds_count{code="2xx",method="POST",route="/v1/chains"}`,
		`studio_http_request_duration_seconds_count{code="4xx",method="GET",route="/metrics"}`,
		`studio_store_duration_seconds_count{op="checkpoint_append"}`,
		`studio_store_duration_seconds_count{op="create_run"}`,
		`go_goroutines`,
		`process_resident_memory_bytes`,
	} {
		if got := metricValue(t, text, sample); got <= 0 {
			t.Errorf("%s = %v, want > 0", sample, got)
		}
	}
}

// A node that fails under on_error: skip sends an error event and then its
// skip: it is one node execution, counted once, as a skip.
func TestMetricsCountASkippedFailureOnce(t *testing.T) {
	t.Parallel()
	const token = "metrics-token"
	_, ts := newTestServerWith(t, Config{Token: token}, testRegistry())
	auth := []string{"Authorization", "Bearer " + token}
	r := do(t, ts, "POST", "/v1/chains", `{"name":"skipfail","nodes":[
	{"node_id":"a","kind":"tool","name":"fail","input":{"message":"flaky disk"},"on_error":"skip"}]}`, auth...)
	wantStatus(t, r, http.StatusCreated)
	r = do(t, ts, "POST", "/v1/chains/"+r.json(t)["id"].(string)+"/runs", `{}`, auth...)
	wantStatus(t, r, http.StatusAccepted)
	waitStatus(t, ts, r.json(t)["run_id"].(string), "partial", auth)
	text := string(do(t, ts, "GET", "/metrics", nil, auth...).body)
	for sample, want := range map[string]float64{
		`studio_node_executions_total{phase="skip"}`:       1,
		`studio_node_duration_seconds_count{phase="skip"}`: 1,
		`studio_node_executions_total{phase="error"}`:      -1, // never counted
	} {
		if got := metricValue(t, text, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
}

// The watchers gauge follows open event streams.
func TestMetricsWatchersGauge(t *testing.T) {
	t.Parallel()
	reg, open := gatedRegistry()
	_, ts := newTestServerWith(t, Config{}, reg)
	// The run waits at its gate, with the stream open, until the gauge is read.
	defer open()
	id := createChain(t, ts, `{"name":"w","nodes":[{"node_id":"ask","kind":"interrupt","config":{"prompt":"ok?"}},
		{"node_id":"wait","kind":"tool","name":"gate"}],"edges":[{"source":"ask","target":"wait"}]}`)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", nil)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	waitRun(t, ts, run)
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"resume_value":true}`), 200)
	res, err := ts.Client().Get(ts.URL + "/v1/runs/" + run + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if _, err := br.ReadString('\n'); err != nil { // the stream is open
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if got := metricValue(t, string(do(t, ts, "GET", "/metrics", nil).body), "studio_sse_watchers"); got != 1 {
			return fmt.Errorf("studio_sse_watchers = %v with one stream open", got)
		}
		return nil
	})
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Every request line carries a request id, every run line its run id.
func TestLogsCarryRequestAndRunIDs(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, ts := newTestServerWith(t, Config{Logger: log}, testRegistry())
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "logs"))
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", nil)
	wantStatus(t, r, http.StatusAccepted)
	waitRun(t, ts, r.json(t)["run_id"].(string))
	do(t, ts, "GET", "/v1/runs/nope", nil)
	do(t, ts, "POST", "/v1/chains", "{bad")
	a2e := `{"type":"chain/req","id":"r1","chain_id":"adhoc","streaming":false,"nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`
	wantStatus(t, do(t, ts, "POST", "/v1/a2e", a2e), 200)

	runRe := regexp.MustCompile(`^run `)
	var requests, runLines int
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		msg, _ := m["msg"].(string)
		switch {
		case msg == "request":
			requests++
			if rid, _ := m["request_id"].(string); rid == "" {
				t.Errorf("request line without request_id: %s", line)
			}
		case runRe.MatchString(msg):
			runLines++
			if rid, _ := m["run_id"].(string); rid == "" {
				t.Errorf("run line without run_id: %s", line)
			}
		}
	}
	if requests < 5 || runLines < 4 {
		t.Fatalf("%d request lines, %d run lines:\n%s", requests, runLines, buf.String())
	}
}
