package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/examples"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/llm/anthropic"
	"github.com/chainstudio/studio/engine/llm/gemini"
	"github.com/chainstudio/studio/engine/llm/openai"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlite"
)

// testLogger discards below warnings, so test output stays readable.
func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func testRegistry() *engine.Registry {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	reg.SetInline(builtin.Inline...)
	return reg
}

// newTestServer starts a studio on a real store in a temp folder behind an
// httptest server.
func newTestServer(t testing.TB) (*Server, *httptest.Server) {
	return newTestServerWith(t, Config{}, testRegistry())
}

func newTestServerWith(t testing.TB, cfg Config, reg *engine.Registry) (*Server, *httptest.Server) {
	return newTestServerOpts(t, cfg, reg, nil)
}

// newTestServerOpts is newTestServerWith with a say in the run service's
// options (the hub's buffer, the agents).
func newTestServerOpts(t testing.TB, cfg Config, reg *engine.Registry, tune func(*runs.Options)) (*Server, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	srv, err := New(cfg, testDeps(t, db, reg, func(o *runs.Options) {
		o.Logger = cfg.Logger // run lines go where request lines go
		if tune != nil {
			tune(o)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	ts := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(ts.Close)
	return srv, ts
}

// testDeps wires a run service on db as cmd/studio does; it is closed when
// the test ends (after the server's shutdown, before the store closes, when
// those were registered earlier).
func testDeps(t testing.TB, db store.Backend, reg *engine.Registry, tune func(*runs.Options)) Deps {
	t.Helper()
	metrics := NewMetrics()
	opts := runs.Options{Store: db, Registry: reg, Logger: testLogger(), Observer: metrics, Conversations: db}
	if tune != nil {
		tune(&opts)
	}
	svc, err := runs.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svc.Shutdown(context.Background()); err != nil {
			t.Errorf("runs shutdown: %v", err)
		}
		if err := svc.Close(); err != nil {
			t.Errorf("runs close: %v", err)
		}
	})
	return Deps{DB: db, Runs: svc, Registry: reg, Agents: opts.Agents, Providers: testProviders, Metrics: metrics, Templates: testTemplates(t)}
}

// testProviders are the model provider kinds the studio offers, as
// cmd/studio lists them.
var testProviders = llm.Kinds{openai.Kind, anthropic.Kind, gemini.Kind}

// service is the server's run service as the host built it.
func service(srv *Server) *runs.Service { return srv.Runs }

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// errCode returns error.code of a JSON error response, or of a JSON-RPC
// error's data (the /v1/mcp endpoint answers refusals in JSON-RPC).
func (r resp) errCode(t testing.TB) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("not an error response: %s", r.body)
	}
	if code, ok := e["code"].(string); ok {
		return code
	}
	d, _ := e["data"].(map[string]any)
	code, _ := d["code"].(string)
	return code
}

func (r resp) errDetails(t testing.TB) map[string]any {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

func do(t testing.TB, ts *httptest.Server, method, path string, body any, headers ...string) resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = strings.NewReader(string(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(j))
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

func wantStatus(t testing.TB, r resp, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
}

const linearDoc = `{"name":"%s","nodes":[
	{"node_id":"a","kind":"tool","name":"echo","input_map":{"x":"input.x"}},
	{"node_id":"b","kind":"tool","name":"echo"}],
	"edges":[{"source":"a","target":"b"}]}`

// createChain saves a chain and returns its id.
func createChain(t testing.TB, ts *httptest.Server, doc string) string {
	t.Helper()
	r := do(t, ts, "POST", "/v1/chains", doc)
	wantStatus(t, r, http.StatusCreated)
	return r.json(t)["id"].(string)
}

// waitRun waits until a run is no longer running, as the API reports it,
// and returns the API's run.
func waitRun(t testing.TB, ts *httptest.Server, id string) map[string]any {
	t.Helper()
	var m map[string]any
	testutil.Eventually(t, 20*time.Second, func() error {
		r := do(t, ts, "GET", "/v1/runs/"+id, nil)
		wantStatus(t, r, http.StatusOK)
		m = r.json(t)
		if m["status"] == "running" || m["active"] != false {
			return fmt.Errorf("run %s is still %v (active %v)", id, m["status"], m["active"])
		}
		return nil
	})
	return m
}

// waitIdle waits until the run service no longer runs runID.
func waitIdle(t testing.TB, srv *Server, runID string) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() error {
		if srv.Runs.Active(runID) {
			return fmt.Errorf("run %s is still active", runID)
		}
		return nil
	})
}

// testTemplates are the studio's own templates (examples.Templates).
func testTemplates(t testing.TB) []Template {
	all, err := examples.Templates()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]Template, len(all))
	for i, x := range all {
		out[i] = Template{ID: x.ID, Data: x.Data}
	}
	return out
}
