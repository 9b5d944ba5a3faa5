package web

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent's model URL may carry credentials (user info, an api_key in the
// query). They are never shown: not by GET /v1/agents or /v1/agents/{name},
// not in model-call errors, run events, agent or A2E answers, nor logs.
func TestModelURLCredentialsRedacted(t *testing.T) {
	t.Parallel()
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("model exploded"))
	}))
	defer llm.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close() // a loopback port nobody listens on: the connection error path

	const user, pass, key = "admin-user", "hunter2-pass", "SECRETKEY-123"
	host := strings.TrimPrefix(llm.URL, "http://")
	dir := t.TempDir()
	for n, b := range map[string]string{
		"leaky.agent.yaml": fmt.Sprintf("name: leaky\nmodel: {url: 'http://%s:%s@%s/v1?api_key=%s', name: q}\n", user, pass, host, key),
		"dead.agent.yaml":  fmt.Sprintf("name: dead\nmodel: {url: 'http://%s:%s@%s/v1?api_key=%s', name: q}\n", user, pass, deadAddr, key),
	} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs lockedBuffer
	srv, ts := newAgentServer(t, dir)
	srv.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})) // what the handlers log
	leaks := func(what string, body []byte) {
		t.Helper()
		for _, secret := range []string{user, pass, key} {
			if strings.Contains(string(body), secret) {
				t.Errorf("%s shows %q: %.600s", what, secret, body)
			}
		}
	}

	r := do(t, ts, "GET", "/v1/agents", nil)
	wantStatus(t, r, http.StatusOK)
	leaks("GET /v1/agents", r.body)
	if want := "http://***@" + host + "/v1?api_key=***"; !strings.Contains(string(r.body), want) {
		t.Errorf("GET /v1/agents: want the redacted %s: %s", want, r.body)
	}
	r = do(t, ts, "GET", "/v1/agents/leaky", nil)
	wantStatus(t, r, http.StatusOK)
	leaks("GET /v1/agents/leaky", r.body)

	for _, name := range []string{"leaky", "dead"} {
		r = do(t, ts, "POST", "/v1/agents/"+name+"/run", map[string]any{"query": "x"})
		wantStatus(t, r, http.StatusOK)
		leaks("the "+name+" agent's answer", r.body)
		m := r.json(t)
		if !strings.Contains(fmt.Sprint(m["error"]), "model q at http://***@") {
			t.Errorf("%s: the error should name the redacted endpoint: %s", name, r.body)
		}
		waitRun(t, ts, m["run_id"].(string))
		ev := do(t, ts, "GET", "/v1/runs/"+m["run_id"].(string)+"/events", nil)
		leaks(name+" run events", ev.body)
		rr := do(t, ts, "GET", "/v1/runs/"+m["run_id"].(string), nil)
		leaks(name+" run", rr.body)
	}

	a2e := `{"type":"chain/req","id":"r1","streaming":false,"nodes":[{"node_id":"ask","kind":"agent","name":"leaky"}]}`
	r = do(t, ts, "POST", "/v1/a2e", a2e)
	leaks("the A2E answer", r.body)
	if !strings.Contains(string(r.body), "***") {
		t.Errorf("A2E answer %d: %s", r.status, r.body)
	}
	leaks("the server log", []byte(logs.String()))
}
