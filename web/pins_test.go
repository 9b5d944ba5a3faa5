package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// pinsDoc: fetch gives {"score": 3} when it runs; the draft pins 99.
const pinsDoc = `{"name":"%s","nodes":[
	{"node_id":"fetch","kind":"tool","name":"echo","input":{"score":3}},
	{"node_id":"shape","kind":"tool","name":"echo","input_map":{"got":"fetch.output.score"}}],
	"edges":[{"source":"fetch","target":"shape"}],
	"pinned_outputs":{"fetch":{"score":99}}}`

// runResult is what a finished run says of fetch and shape: its kind,
// whether fetch was pinned, and what shape got.
func runResult(t *testing.T, m map[string]any) (kind string, pinned bool, got any) {
	t.Helper()
	for _, n := range m["nodes"].([]any) {
		if nr := n.(map[string]any); nr["node_id"] == "fetch" {
			pinned, _ = nr["pinned"].(bool)
		}
	}
	return m["kind"].(string), pinned, m["outputs"].(map[string]any)["shape"].(map[string]any)["got"]
}

// The API runs the draft with its pins only when asked to (use_pins with
// version "current"); what is published, a version by number and a
// webhook's test event run the pinned node.
func TestAPIRunsUsePinsOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(pinsDoc, "pins-api"))
	run := func(body string) map[string]any {
		t.Helper()
		r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", body)
		wantStatus(t, r, http.StatusAccepted)
		return waitRun(t, ts, r.json(t)["run_id"].(string))
	}
	cases := []struct {
		body, kind string
		pinned     bool
		got        float64
	}{
		{`{"version":"current","use_pins":true}`, "pinned", true, 99},
		{`{"version":"draft","use_pins":true}`, "pinned", true, 99},
		{`{"version":"current"}`, "run", false, 3},
		{`{}`, "run", false, 3}, // the published version (v1, which has the pin)
		{`{"version":1}`, "run", false, 3},
	}
	for _, c := range cases {
		m := run(c.body)
		kind, pinned, got := runResult(t, m)
		if kind != c.kind || pinned != c.pinned || got != c.got || m["status"] != "completed" || m["started_by"] != "manual" {
			t.Errorf("%s: kind %s, fetch pinned %v, shape got %v, status %v, started_by %v; want %s, %v, %v", c.body, kind, pinned, got, m["status"], m["started_by"], c.kind, c.pinned, c.got)
		}
	}
	// the event stream's events say pinned too
	m := run(`{"version":"current","use_pins":true}`)
	r := do(t, ts, "GET", "/v1/runs/"+m["id"].(string)+"/events", nil, "Accept", "application/json")
	if !strings.Contains(string(r.body), `"node_id":"fetch","phase":"done","output":{"score":99}`) || !strings.Contains(string(r.body), `"pinned":true`) {
		t.Errorf("events of a pinned run: %s", r.body)
	}

	// use_pins with anything but the draft is refused, naming the field
	for _, body := range []string{`{"use_pins":true}`, `{"version":"published","use_pins":true}`, `{"version":1,"use_pins":true}`} {
		r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", body)
		wantStatus(t, r, http.StatusBadRequest)
		if r.errCode(t) != "bad_parameter" || r.errDetails(t)["path"] != "use_pins" || !strings.Contains(string(r.body), `needs \"version\": \"current\"`) {
			t.Errorf("%s: %s", body, r.body)
		}
	}

	// a webhook's test event runs the published version without its pins
	r = do(t, ts, "POST", "/v1/chains/"+id+"/hooks", `{}`)
	wantStatus(t, r, http.StatusCreated)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/hooks/"+r.json(t)["id"].(string)+"/test", `{}`)
	wantStatus(t, r, http.StatusAccepted)
	m = waitRun(t, ts, r.json(t)["run_id"].(string))
	if kind, pinned, got := runResult(t, m); kind != "run" || pinned || got != 3.0 || m["started_by"] != "webhook" {
		t.Errorf("webhook test event: kind %s, pinned %v, got %v, started_by %v", kind, pinned, got, m["started_by"])
	}
}

// A stale pin is a validation issue naming the pin; it refuses the runs
// that use the pins (API and the designer's Run), not the others.
func TestStalePinsRefuseOnlyPinnedRuns(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, strings.Replace(fmt.Sprintf(pinsDoc, "pins-stale"), `"pinned_outputs":{"fetch"`, `"pinned_outputs":{"gone"`, 1))
	r := do(t, ts, "GET", "/v1/chains/"+id, nil)
	var found bool
	for _, is := range r.json(t)["issues"].([]any) {
		m := is.(map[string]any)
		found = found || (m["rule"] == "pin_unknown_node" && m["field"] == "pinned_outputs.gone" && m["severity"] == "error")
	}
	if !found {
		t.Fatalf("issues lack the stale pin: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"version":"current","use_pins":true}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.errCode(t) != "chain_invalid" || !strings.Contains(string(r.body), `pinned_outputs.gone: no node \"gone\"`) {
		t.Errorf("use_pins with a stale pin: %s", r.body)
	}
	res, html := pageDo(t, ts.URL, "POST", "/chains/"+id+"/run", "application/x-www-form-urlencoded", url.Values{"input": {"{}"}}.Encode())
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(html, "pinned_outputs.gone") || res.Header.Get("HX-Redirect") != "" {
		t.Errorf("the designer's Run with a stale pin: %d %s", res.StatusCode, html)
	}
	// the published version runs: a pin never stops it
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`)
	wantStatus(t, r, http.StatusAccepted)
	waitRun(t, ts, r.json(t)["run_id"].(string))
}

// The designer's Run uses the pins; the run page marks the pinned node, its
// drawer offers the pin controls, and export and import keep the pins.
func TestPagesPinnedRunAndControls(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(pinsDoc, "pins-page"))
	res, _ := pageDo(t, ts.URL, "POST", "/chains/"+id+"/run", "application/x-www-form-urlencoded", url.Values{"input": {"{}"}}.Encode())
	target := res.Header.Get("HX-Redirect")
	if !strings.HasPrefix(target, "/runs/") {
		t.Fatalf("run: %d, redirect %q", res.StatusCode, target)
	}
	runID := strings.TrimPrefix(target, "/runs/")
	waitIdle(t, srv, runID)
	m := waitRun(t, ts, runID)
	if kind, pinned, got := runResult(t, m); kind != "pinned" || !pinned || got != 99.0 {
		t.Fatalf("the designer's run: kind %s, pinned %v, got %v", kind, pinned, got)
	}
	_, html := pageDo(t, ts.URL, "GET", target, "", "")
	for _, want := range []string{`class="lg ph-pinned"`, `class="ev ph-done pinned"`, "the chain&#39;s pinned output, the node did not run"} {
		if !strings.Contains(html, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	_, drawer := pageDo(t, ts.URL, "GET", target+"/nodes/fetch", "", "")
	for _, want := range []string{`id="drawer-pinned"`, "not run: the output is the chain's pinned output", `id="pin-controls"`, `data-pinned="true"`, `id="btn-unpin"`, `id="btn-pin-mock"`} {
		if !strings.Contains(drawer, want) {
			t.Errorf("drawer of the pinned node lacks %q:\n%s", want, drawer)
		}
	}
	if strings.Contains(drawer, `id="btn-pin"`) {
		t.Errorf("a pinned node's output is its pin: nothing new to pin")
	}
	_, drawer = pageDo(t, ts.URL, "GET", target+"/nodes/shape", "", "")
	if !strings.Contains(drawer, `id="btn-pin"`) || !strings.Contains(drawer, `data-pinned="false"`) || !strings.Contains(drawer, `id="btn-unpin" hidden`) {
		t.Errorf("drawer of shape (it ran) must offer the pin:\n%s", drawer)
	}

	// export and import keep the pins
	r := do(t, ts, "GET", "/v1/chains/"+id+"/export", nil)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"pinned_outputs": {`) {
		t.Fatalf("export lacks the pins: %s", r.body)
	}
	doc := strings.Replace(string(r.body), `"name": "pins-page"`, `"name": "pins-page-imported"`, 1)
	r = do(t, ts, "POST", "/v1/chains/import", doc)
	wantStatus(t, r, http.StatusCreated)
	got := r.json(t)["doc"].(map[string]any)["pinned_outputs"]
	if fmt.Sprint(got) != "map[fetch:map[score:99]]" {
		t.Errorf("imported pins = %v", got)
	}
}

// A pin over the size limit is refused with a message naming it.
func TestHugePinIsRefused(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(pinsDoc, "pins-huge"))
	huge := strings.Replace(fmt.Sprintf(pinsDoc, "pins-huge"), `{"score":99}`, `"`+strings.Repeat("x", 2<<20)+`"`, 1)
	r := do(t, ts, "PUT", "/v1/chains/"+id, huge, "If-Match", `"v1"`)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "pinned_outputs.fetch") || !strings.Contains(string(r.body), "over the limit of 2097152") {
		t.Fatalf("a 2 MiB pin: %d %.400s", r.status, r.body)
	}
}
