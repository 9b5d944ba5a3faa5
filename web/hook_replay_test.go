package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/web/api"
)

// A captured webhook call is accepted once: the same signed post again
// (even at once, in parallel) is 409 signature_replayed and starts no run;
// a signature dated more than 30 s ahead is refused, one 20 s ahead is
// accepted (a sender's clock running a little fast).
func TestWebhookReplayRefused(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	chainID := createChain(t, ts, fmt.Sprintf(linearDoc, "replayed"))
	r := do(t, ts, "POST", "/v1/chains/"+chainID+"/hooks", `{}`)
	wantStatus(t, r, http.StatusCreated)
	hookID, secret := r.json(t)["id"].(string), r.json(t)["secret"].(string)
	runCount := func() int {
		r := do(t, ts, "GET", "/v1/runs?chain="+chainID, nil)
		wantStatus(t, r, http.StatusOK)
		return len(r.json(t)["runs"].([]any))
	}
	body := `{"x":"once"}`
	sig := api.SignHook(secret, time.Now(), []byte(body))
	first := do(t, ts, "POST", "/v1/hooks/"+hookID, body, api.HookSignatureHeader, sig)
	wantStatus(t, first, http.StatusAccepted)
	var wg sync.WaitGroup
	replays := make([]resp, 3)
	for i := range replays {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			replays[i] = do(t, ts, "POST", "/v1/hooks/"+hookID, body, api.HookSignatureHeader, sig)
		}(i)
	}
	wg.Wait()
	for _, r := range replays {
		if r.status != http.StatusConflict || r.errCode(t) != "signature_replayed" {
			t.Fatalf("replayed call: %d %s, want 409 signature_replayed", r.status, r.body)
		}
	}
	// Another v1 value beside the one that matches is the same signature.
	wantStatus(t, do(t, ts, "POST", "/v1/hooks/"+hookID, body, api.HookSignatureHeader, sig+",v1=00"), http.StatusConflict)
	waitIdle(t, srv, first.json(t)["run_id"].(string))
	if n := runCount(); n != 1 {
		t.Fatalf("one call and its replays started %d runs, want 1", n)
	}

	ahead := do(t, ts, "POST", "/v1/hooks/"+hookID, body, api.HookSignatureHeader, api.SignHook(secret, time.Now().Add(time.Minute), []byte(body)))
	if ahead.status != http.StatusUnauthorized || ahead.errCode(t) != "stale_signature" || !strings.Contains(string(ahead.body), "ahead of the studio") {
		t.Fatalf("signed a minute ahead: %d %s, want 401 stale_signature", ahead.status, ahead.body)
	}
	r = do(t, ts, "POST", "/v1/hooks/"+hookID, body, api.HookSignatureHeader, api.SignHook(secret, time.Now().Add(20*time.Second), []byte(body)))
	wantStatus(t, r, http.StatusAccepted)
	waitIdle(t, srv, r.json(t)["run_id"].(string))
	// A new signature of the same body (another second) is another call.
	r = do(t, ts, "POST", "/v1/hooks/"+hookID, body, api.HookSignatureHeader, api.SignHook(secret, time.Now().Add(-time.Minute), []byte(body)))
	wantStatus(t, r, http.StatusAccepted)
	waitIdle(t, srv, r.json(t)["run_id"].(string))
	if n := runCount(); n != 3 {
		t.Fatalf("%d runs, want 3", n)
	}
}

// A flood of badly signed calls writes the first refusal in full, then one
// summary line per period with the count, not one line per call; once a
// period passes with none, the next is written in full again.
func TestWebhookRefusalsLogSummarised(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	srv, ts := newTestServerWith(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, testRegistry())
	srv.hookLog.Every = time.Hour // the test ends the periods (flush)
	chainID := createChain(t, ts, fmt.Sprintf(linearDoc, "flooded"))
	r := do(t, ts, "POST", "/v1/chains/"+chainID+"/hooks", `{}`)
	wantStatus(t, r, http.StatusCreated)
	hookID := r.json(t)["id"].(string)
	const bad = 300
	for i := 0; i < bad; i++ {
		sig := ""
		if i%2 == 1 {
			sig = api.SignHook("not-the-secret", time.Now(), []byte(`{}`))
		}
		wantStatus(t, do(t, ts, "POST", "/v1/hooks/"+hookID, `{}`, api.HookSignatureHeader, sig), http.StatusUnauthorized)
	}
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `msg="webhook call refused"`) {
				out = append(out, l)
			}
		}
		return out
	}
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "code=missing_signature") || !strings.Contains(got[0], "hook_id="+hookID) {
		t.Fatalf("%d bad calls wrote %d lines, want the first in full:\n%s", bad, len(got), strings.Join(got, "\n"))
	}
	srv.hookLog.Flush()
	got := lines()
	if len(got) != 2 || !regexp.MustCompile(`summary=true count=299 codes="bad_signature=150 missing_signature=149"`).MatchString(got[1]) {
		t.Fatalf("after the period: %d lines, want the summary of 299 more:\n%s", len(got), strings.Join(got, "\n"))
	}
	srv.hookLog.Flush() // a period with none: quiet
	if len(lines()) != 2 {
		t.Fatalf("an empty period wrote a line:\n%s", logs.String())
	}
	wantStatus(t, do(t, ts, "POST", "/v1/hooks/"+hookID, `{}`), http.StatusUnauthorized)
	if got := lines(); len(got) != 3 || strings.Contains(got[2], "summary") {
		t.Fatalf("after a quiet period the next refusal is not written in full:\n%s", strings.Join(got, "\n"))
	}
}
