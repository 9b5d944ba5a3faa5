package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chainstudio/studio/engine"
)

// pageStream is what a run page's stream delivered.
type pageStream struct {
	events  []engine.Event
	entries []string // by event; "" when its frame had none
	final   map[string]any
	frames  []sseFrame
}

// readPageStream reads a run page's stream to its end.
func readPageStream(t *testing.T, body io.Reader) pageStream {
	t.Helper()
	var out pageStream
	rd := newSSEReader(body)
	for {
		f, err := rd.next()
		if err != nil {
			return out
		}
		out.frames = append(out.frames, f)
		switch {
		case f.Comment, f.Event == "queued":
		case f.Event == "run":
			if err := json.Unmarshal([]byte(f.Data), &out.final); err != nil {
				t.Fatalf("run frame: %v: %s", err, f.Data)
			}
		default:
			var fr struct {
				Event *engine.Event `json:"event"`
				Entry *string       `json:"entry"`
			}
			if err := json.Unmarshal([]byte(f.Data), &fr); err != nil || fr.Event == nil {
				t.Fatalf("frame %q: %v: %.300s", f.Event, err, f.Data)
			}
			if f.ID != strconv.FormatInt(fr.Event.Seq, 10) || f.Event != string(fr.Event.Phase) {
				t.Errorf("frame id/event %q/%q do not match event seq %d phase %s", f.ID, f.Event, fr.Event.Seq, fr.Event.Phase)
			}
			out.events = append(out.events, *fr.Event)
			entry := ""
			if fr.Entry != nil {
				if entry = *fr.Entry; entry == "" {
					t.Errorf("event %d: an empty entry", fr.Event.Seq)
				}
			}
			out.entries = append(out.entries, entry)
		}
	}
}

// openPageStream opens a run page's stream; headers are name/value pairs.
func openPageStream(t *testing.T, ts *httptest.Server, path string, headers ...string) *http.Response {
	t.Helper()
	res, err := openSSE(context.Background(), ts.Client(), ts.URL+path, headers...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("GET %s: %d %s: %.300s", path, res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	return res
}

// The run page's stream carries, with each event, the timeline entry the
// page's first render has for it, live and replayed, and ends with the
// controls and the usage panel the page's fragments render: a page that
// followed the run shows what a reload does.
func TestPageStreamCarriesWhatThePageShows(t *testing.T) {
	t.Parallel()
	reg, open := gatedRegistry()
	_, ts := newTestServerWith(t, Config{}, reg)
	id := createChain(t, ts, `{"name":"page stream","nodes":[
		{"node_id":"gate","kind":"tool","name":"gate","label":"Wait <here>"},
		{"node_id":"each","kind":"map","label":"Each item","items_path":"input.items","map_node":"body"},
		{"node_id":"body","kind":"tool","name":"echo","label":"Echo <it>","input_map":{"item":"item"}},
		{"node_id":"join","kind":"tool","name":"echo","input_map":{"n":"length(each.output)"}}],
		"edges":[{"source":"gate","target":"each"},{"source":"each","target":"join"}]}`)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"items":[1,2,3,4,5,6,7,8,9,10,11,12]}}`)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)

	// Two pages follow the run from its start: the gate holds it until
	// both are subscribed, so what follows reaches them live.
	a := openPageStream(t, ts, "/runs/"+run+"/events?after=0&shown=0")
	b := openPageStream(t, ts, "/runs/"+run+"/events")
	open()
	var live [2]pageStream
	var wg sync.WaitGroup
	for i, res := range []*http.Response{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); live[i] = readPageStream(t, res.Body) }()
	}
	wg.Wait()
	page := pageTimeline(t, ts, run)
	for i, got := range live {
		checkSeqs(t, got.events)
		if len(got.events) < 30 {
			t.Fatalf("page %d: %d events", i, len(got.events))
		}
		for j, e := range got.entries {
			if e == "" {
				t.Errorf("page %d: event %d came without its entry", i, got.events[j].Seq)
			}
		}
		if joined := strings.Join(got.entries, ""); joined != page {
			t.Fatalf("page %d: the stream's entries differ from the page's timeline:\nstream %.600s\npage   %.600s", i, joined, page)
		}
		if got.final == nil || got.final["status"] != "completed" {
			t.Fatalf("page %d: the last frame %v", i, got.final)
		}
		if controls := string(do(t, ts, "GET", "/runs/"+run+"/controls", nil).body); got.final["controls"] != controls {
			t.Errorf("page %d: the stream's controls differ from the fragment's:\nstream   %v\nfragment %s", i, got.final["controls"], controls)
		}
		if usage := string(do(t, ts, "GET", "/runs/"+run+"/usage", nil).body); got.final["usage"] != usage {
			t.Errorf("page %d: the stream's usage panel differs from the fragment's:\nstream   %v\nfragment %s", i, got.final["usage"], usage)
		}
		if _, ok := got.final["duration_ms"].(float64); !ok {
			t.Errorf("page %d: no duration in %v", i, got.final)
		}
	}
	for _, want := range []string{`<span class="node-label">Echo &lt;it&gt;</span>`, `data-progress="1/12"`, `class="ev ph-done"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}

	// A page that came with entries up to seq 7 gets the entries of the
	// events after it only; a replay renders them as live frames did.
	late := readPageStream(t, openPageStream(t, ts, "/runs/"+run+"/events?after=0&shown=7").Body)
	checkSeqs(t, late.events)
	for i, e := range late.events {
		if (late.entries[i] != "") != (e.Seq > 7) {
			t.Fatalf("event %d: entry %q with shown=7", e.Seq, late.entries[i])
		}
	}
	if strings.Join(late.entries, "") != strings.Join(live[0].entries[7:], "") {
		t.Fatal("replayed entries differ from the live ones")
	}

	// Last-Event-ID resumes after it, as on the API's stream.
	resumed := readPageStream(t, openPageStream(t, ts, "/runs/"+run+"/events?after=0", "Last-Event-ID", "20").Body)
	if len(resumed.events) == 0 || resumed.events[0].Seq != 21 || resumed.final == nil {
		t.Fatalf("resumed after 20: %d events from %v", len(resumed.events), resumed.events)
	}

	wantStatus(t, do(t, ts, "GET", "/runs/"+run+"/events?shown=-1", nil), http.StatusBadRequest)
	wantStatus(t, do(t, ts, "GET", "/runs/"+run+"/events?after=x", nil), http.StatusBadRequest)
	wantStatus(t, do(t, ts, "GET", "/runs/nope/events", nil), http.StatusNotFound)
}

// A paused run's page stream ends with the answer forms, for the caller's
// role, as the controls fragment renders them.
func TestPageStreamPausedControls(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	run := startChainRun(t, ts, approvalDoc)
	waitRun(t, ts, run)
	got := readPageStream(t, openPageStream(t, ts, "/runs/"+run+"/events").Body)
	controls := string(do(t, ts, "GET", "/runs/"+run+"/controls", nil).body)
	if got.final == nil || got.final["status"] != "paused" || got.final["controls"] != controls || !strings.Contains(controls, `id="approval-form"`) {
		t.Fatalf("paused run: %v\nfragment %s", got.final, controls)
	}
}

// The page's frames withhold credentialed outputs from viewers as the
// API's do, live (where one frame is shared by the pages that see the same)
// and replayed.
func TestPageStreamWithholdsCredentialedOutputs(t *testing.T) {
	t.Parallel()
	const answer = "upstream-private-answer"
	hold := make(chan struct{})
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/hold" {
			<-hold
			fmt.Fprint(w, `{"held":true}`)
			return
		}
		fmt.Fprintf(w, `{"account":%q}`, answer)
	}))
	defer stub.Close()
	srv, ts := newVaultServer(t)
	h := roleTokens(t, srv)
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"github","type":"bearer","fields":{"token":"`+credToken+`"},"hosts":["127.0.0.1"]}`, h["admin"]...), http.StatusCreated)
	doc := fmt.Sprintf(`{"name":"held","nodes":[
		{"node_id":"wait","kind":"tool","name":"http","input":{"url":%q}},
		{"node_id":"get","kind":"tool","name":"http","input":{"url":%q,"auth":{"credential":"github"}}},
		{"node_id":"plain","kind":"tool","name":"echo","input":{"visible":"yes"}}],
		"edges":[{"source":"wait","target":"get"},{"source":"get","target":"plain"}]}`, stub.URL+"/hold", stub.URL+"/user")
	id := createChainAs(t, ts, doc, h["editor"])
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, h["editor"]...)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)

	roles := []string{"viewer", "approver", "editor", "admin", "viewer"}
	res := make([]*http.Response, len(roles))
	for i, role := range roles {
		res[i] = openPageStream(t, ts, "/runs/"+run+"/events", h[role]...)
	}
	close(hold)
	out := make([]pageStream, len(roles))
	var wg sync.WaitGroup
	for i := range roles {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = readPageStream(t, res[i].Body) }()
	}
	wg.Wait()
	check := func(how, role string, got pageStream) {
		t.Helper()
		var all strings.Builder
		for _, f := range got.frames {
			all.WriteString(f.Data)
		}
		hides := role == "viewer" || role == "approver"
		if shows := strings.Contains(all.String(), answer); shows == hides || got.final == nil {
			t.Errorf("%s %s: shows the credentialed answer: %v (final %v)", how, role, shows, got.final != nil)
		}
		if !strings.Contains(all.String(), `\"visible\":\"yes\"`) && !strings.Contains(all.String(), `"visible":"yes"`) {
			t.Errorf("%s %s: the plain node's output is not there", how, role)
		}
	}
	for i, role := range roles {
		check("live", role, out[i])
	}
	for _, role := range roles[:4] {
		check("replayed", role, readPageStream(t, openPageStream(t, ts, "/runs/"+run+"/events", h[role]...).Body))
	}
}
