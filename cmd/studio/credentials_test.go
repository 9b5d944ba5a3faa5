package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
	"google.golang.org/protobuf/encoding/protojson"
)

// The secrets of the credentials the test stores, one of each HTTP type.
var credSecrets = map[string]string{
	"bearer": "tok-Bearer-secret-0123456789",
	"header": "key-Header-secret-0123456789",
	"query":  "key Query/secret+0123456789",
	"basic":  "pw-Basic-secret-0123456789",
	"custom": "hdr-Custom-secret-0123456789",
}

// credStub checks that each request carries its credential and echoes every
// header and the query back, as careless servers do, so that scrubbing is
// what keeps the values out of the run.
func credStub(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := map[string]bool{
			"/bearer": r.Header.Get("Authorization") == "Bearer "+credSecrets["bearer"],
			"/header": r.Header.Get("X-API-Key") == credSecrets["header"],
			"/query":  r.URL.Query().Get("api_key") == credSecrets["query"],
			"/basic":  r.Header.Get("Authorization") == "Basic "+base64.StdEncoding.EncodeToString([]byte("ann:"+credSecrets["basic"])),
			"/custom": r.Header.Get("X-Secret") == credSecrets["custom"],
		}
		if !want[r.URL.Path] {
			http.Error(w, "unauthenticated "+r.URL.Path, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "headers": r.Header, "query": r.URL.RawQuery})
	}))
	t.Cleanup(s.Close)
	return s
}

// credentialsCLI runs `studio credentials …` with stdin.
func credentialsCLI(t *testing.T, bin, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"credentials"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "STUDIO_CREDENTIALS_KEY=", "STUDIO_CREDENTIALS_KEY_FILE=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("studio credentials %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// A chain whose http nodes authenticate with stored credentials of every
// HTTP type runs against a stub that checks them; afterwards no form of
// any value is in the database file, the log, the API's answers, the export
// or the spans an OTLP receiver got. Rotating the key keeps the chain
// working; a wrong key stops the start with a message naming the file.
func TestCredentialsNeverLeaveTheVault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the studio binary")
	}
	bin := builtStudio(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "studio.db")
	rcv := newOTLPSpans(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	stub := credStub(t)

	credentialsCLI(t, bin, credSecrets["bearer"]+"\n", "add", "bearer", "--db", db, "--type", "bearer", "--field", "token=-", "--host", "127.0.0.1")
	credentialsCLI(t, bin, "", "add", "header", "--db", db, "--type", "api_key", "--field", "in=header", "--field", "name=X-API-Key", "--field", "value="+credSecrets["header"], "--host", "127.0.0.1")
	credentialsCLI(t, bin, "", "add", "query", "--db", db, "--type", "api_key", "--field", "in=query", "--field", "name=api_key", "--field", "value="+credSecrets["query"], "--host", "127.0.0.1")
	credentialsCLI(t, bin, credSecrets["basic"]+"\n", "add", "basic", "--db", db, "--type", "basic", "--field", "username=ann", "--field", "password=-", "--host", "127.0.0.1")
	added := credentialsCLI(t, bin, "", "add", "custom", "--db", db, "--type", "headers", "--field", "headers=X-Secret: "+credSecrets["custom"], "--field", "headers=X-Team: core")
	if !strings.Contains(added, "no allowed hosts") {
		t.Fatalf("adding an HTTP credential without hosts does not say it goes nowhere: %s", added)
	}
	if list := credentialsCLI(t, bin, "", "list", "--db", db); !strings.Contains(list, "none: unusable") {
		t.Fatalf("the list does not mark a credential without hosts: %s", list)
	}
	credentialsCLI(t, bin, "", "set", "custom", "--db", db, "--host", "127.0.0.1")
	list := credentialsCLI(t, bin, "", "list", "--db", db)
	if strings.Contains(list, "none: unusable") || !strings.Contains(list, "HOSTS") {
		t.Fatalf("hosts in the list: %s", list)
	}
	if info, err := os.Stat(db + ".key"); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the key file beside the database: %v %v", info, err)
	}

	p := startStudio(t, bin, db, "--http-allow-private")
	var nodes, edges []map[string]any
	order := []string{"bearer", "header", "query", "basic", "custom"}
	for i, name := range order {
		nodes = append(nodes, map[string]any{"node_id": name, "kind": "tool", "name": "http",
			"input": map[string]any{"url": stub.URL + "/" + name, "auth": map[string]any{"credential": name}}})
		if i > 0 {
			edges = append(edges, map[string]any{"source": order[i-1], "target": name})
		}
	}
	code, ch := p.do(t, "POST", "/v1/chains", map[string]any{"name": "authenticated", "nodes": nodes, "edges": edges})
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, ch)
	}
	id := ch["id"].(string)
	runOnce := func(p *studioProc) string {
		code, r := p.do(t, "POST", "/v1/chains/"+id+"/runs", map[string]any{"input": map[string]any{}})
		if code != http.StatusAccepted {
			t.Fatalf("run: %d %v", code, r)
		}
		run := r["run_id"].(string)
		m := p.waitStatus(t, run, "completed", "failed")
		if m["status"] != "completed" {
			t.Fatalf("run %s: %v\n%s", run, m, p.logs())
		}
		return run
	}
	run := runOnce(p)

	var answers bytes.Buffer
	for _, path := range []string{"/v1/runs/" + run, "/v1/chains/" + id + "/export", "/v1/chains/" + id, "/v1/credentials", "/v1/chains/" + id + "/versions"} {
		req, _ := http.NewRequest("GET", p.url+path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answers.ReadFrom(res.Body)
		res.Body.Close()
	}
	evs, _ := json.Marshal(p.events(t, run))
	answers.Write(evs)
	if !strings.Contains(answers.String(), "[credential]") {
		t.Fatalf("the echoes were not scrubbed into the run, so the test proves nothing:\n%.2000s", answers.String())
	}
	if err := testutil.Poll(20*time.Second, func() error {
		if len(rcv.spansOf(run)) == 0 {
			return fmt.Errorf("no span of the run yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("the OTLP receiver got no span of the run, so the span check would cover nothing: %v", err)
	}
	p.stop(t)
	spans := rcv.dump()

	var disk bytes.Buffer
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		if b, err := os.ReadFile(f); err == nil {
			disk.Write(b)
		}
	}
	places := map[string][]byte{"database file": disk.Bytes(), "log": []byte(p.logs()), "API answers": answers.Bytes(), "spans": spans, "CLI list": []byte(list)}
	for name, secret := range credSecrets {
		forms := []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), url.QueryEscape(secret)}
		if name == "basic" {
			forms = append(forms, base64.StdEncoding.EncodeToString([]byte("ann:"+secret)))
		}
		for where, b := range places {
			for _, f := range forms {
				if bytes.Contains(b, []byte(f)) {
					t.Errorf("%s holds credential %s (as %q)", where, name, f)
				}
			}
		}
	}

	// Rotation: every credential re-sealed under a new key; the chain runs.
	before, _ := os.ReadFile(db + ".key")
	out := credentialsCLI(t, bin, "", "rotate-key", "--db", db)
	after, _ := os.ReadFile(db + ".key")
	if bytes.Equal(before, after) || !strings.Contains(out, "rotated") {
		t.Fatalf("rotate-key: %s", out)
	}
	if _, err := os.Stat(db + ".key.new"); !os.IsNotExist(err) {
		t.Fatalf("the new key file was left beside the key: %v", err)
	}
	p = startStudio(t, bin, db, "--http-allow-private")
	runOnce(p)
	p.stop(t)

	// The old key no longer opens the database: a clear start-up error.
	wrong := filepath.Join(dir, "old.key")
	os.WriteFile(wrong, before, 0o600)
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--no-examples", "--credentials-key-file", wrong)
	res, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(res), wrong) || !strings.Contains(string(res), "another key") {
		t.Fatalf("start with the old key: %v\n%s", err, res)
	}
	// A missing key file, while the database holds credentials, is one too.
	os.Rename(db+".key", db+".key.moved")
	res, err = exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--no-examples").CombinedOutput()
	if err == nil || !strings.Contains(string(res), db+".key is missing") {
		t.Fatalf("start without the key file: %v\n%s", err, res)
	}
}

// spansOf returns every span of a run.
func (r *otlpSpans) spansOf(runID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.spans {
		for _, a := range s.Attributes {
			if a.Key == "studio.run.id" && a.Value.GetStringValue() == runID {
				out = append(out, s.Name)
			}
		}
	}
	return out
}

// dump is every span received, as JSON, to search.
func (r *otlpSpans) dump() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	for _, s := range r.spans {
		j, _ := protojson.Marshal(s)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
