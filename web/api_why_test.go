package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/runs"
)

const whyDoc = `{"name":"why","nodes":[
	{"node_id":"score","kind":"tool","name":"echo","input_map":{"score":"input.score"}},
	{"node_id":"high","kind":"tool","name":"echo"},
	{"node_id":"low/er","kind":"tool","name":"echo"},
	{"node_id":"after","kind":"tool","name":"echo"}],
	"edges":[{"source":"score","target":"high","condition":"output.score > ` + "`5`" + `"},
	{"source":"score","target":"low/er","default":true},
	{"source":"high","target":"after"}]}`

type whyStepJSON struct {
	Node    string `json:"node"`
	Edge    string `json:"edge"`
	Target  string `json:"target"`
	Expr    string `json:"expr"`
	Result  string `json:"result"`
	Rule    string `json:"rule"`
	Outcome string `json:"outcome"`
	Reads   []struct {
		Path  string `json:"path"`
		Value string `json:"value"`
	} `json:"reads"`
}

type whyAnswerJSON struct {
	RunID     string        `json:"run_id"`
	RunStatus string        `json:"run_status"`
	Node      string        `json:"node"`
	Status    string        `json:"status"`
	Reason    string        `json:"reason"`
	Decisions []whyStepJSON `json:"decisions"`
	Incoming  []whyStepJSON `json:"incoming"`
	Causes    []whyStepJSON `json:"causes"`
}

func getWhy(t *testing.T, r resp) whyAnswerJSON {
	t.Helper()
	wantStatus(t, r, http.StatusOK)
	var a whyAnswerJSON
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return a
}

func TestRunNodeWhy(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	chainID := createChain(t, ts, whyDoc)
	r := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{"input":{"score":3}}`)
	runID := r.json(t)["run_id"].(string)
	if m := waitRun(t, ts, runID); m["status"] != "completed" {
		t.Fatalf("run: %v", m)
	}
	base := "/v1/runs/" + runID + "/nodes/"

	// a skipped node two steps from the decision: after ← high ← score's condition
	a := getWhy(t, do(t, ts, "GET", base+"after/why", nil))
	if a.RunID != runID || a.RunStatus != "completed" || a.Node != "after" || a.Status != "skip" {
		t.Fatalf("answer: %+v", a)
	}
	if len(a.Causes) != 2 {
		t.Fatalf("causes: %+v", a.Causes)
	}
	if c := a.Causes[0]; c.Node != "high" || c.Edge != "high->after" || c.Rule != "pruned_upstream_skipped" || c.Outcome != "pruned" {
		t.Errorf("first cause: %+v", c)
	}
	c := a.Causes[1]
	if c.Node != "score" || c.Edge != "score->high" || c.Target != "high" || c.Expr != "output.score > `5`" || c.Result != "false" || c.Rule != "first_match" {
		t.Errorf("deciding cause: %+v", c)
	}
	if len(c.Reads) != 1 || c.Reads[0].Path != "output.score" || c.Reads[0].Value != "3" {
		t.Errorf("reads: %+v", c.Reads)
	}

	// a node that ran: the decision on its incoming edge that fired; a node
	// id with a slash travels path-escaped
	a = getWhy(t, do(t, ts, "GET", base+url.PathEscape("low/er")+"/why", nil))
	if a.Status != "done" || len(a.Incoming) != 1 || a.Incoming[0].Rule != "default_no_match" || a.Incoming[0].Outcome != "fired" {
		t.Errorf("low/er: %+v", a)
	}
	// a node's own decisions: one per outgoing edge (what the canvas shows on hover)
	a = getWhy(t, do(t, ts, "GET", base+"score/why", nil))
	if len(a.Decisions) != 2 || a.Decisions[0].Edge != "score->high" || a.Decisions[1].Edge != "score->low/er" {
		t.Errorf("score decisions: %+v", a.Decisions)
	}

	// unknown run, unknown node: 404 saying which
	r = do(t, ts, "GET", "/v1/runs/nope/nodes/after/why", nil)
	wantStatus(t, r, http.StatusNotFound)
	if r.errCode(t) != "not_found" || !strings.Contains(string(r.body), `run \"nope\" not found`) {
		t.Errorf("unknown run: %s", r.body)
	}
	r = do(t, ts, "GET", base+"ghost/why", nil)
	wantStatus(t, r, http.StatusNotFound)
	if r.errCode(t) != "unknown_node" || r.errDetails(t)["node_id"] != "ghost" || !strings.Contains(string(r.body), `has no node \"ghost\"`) {
		t.Errorf("unknown node: %s", r.body)
	}
}

// The run's event stream carries the decisions (what `studio run --json`
// and the run page read).
func TestRunEventsCarryDecisions(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	chainID := createChain(t, ts, whyDoc)
	r := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{"input":{"score":9}}`)
	runID := r.json(t)["run_id"].(string)
	waitRun(t, ts, runID)
	r = do(t, ts, "GET", "/v1/runs/"+runID+"/events", nil, "Accept", "application/json")
	wantStatus(t, r, http.StatusOK)
	for _, line := range strings.Split(string(r.body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			NodeID    string        `json:"node_id"`
			Phase     string        `json:"phase"`
			Decisions []whyStepJSON `json:"decisions"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.NodeID != "score" || ev.Phase != "done" {
			continue
		}
		if len(ev.Decisions) != 2 {
			t.Fatalf("decisions of score's done event: %s", data)
		}
		d := ev.Decisions[0]
		if d.Edge != "score->high" || d.Expr != "output.score > `5`" || d.Result != "true" || d.Rule != "first_match" || d.Outcome != "fired" ||
			len(d.Reads) != 1 || d.Reads[0].Value != "9" {
			t.Errorf("decision: %s", data)
		}
		return
	}
	t.Fatalf("no done event of score: %s", r.body)
}

// A run still running or waiting for a slot answers too: nothing decided
// yet, said plainly; a node its chain does not have is still a 404.
func TestRunNodeWhyBeforeItRuns(t *testing.T) {
	t.Parallel()
	reg, open := gatedRegistry()
	defer open()
	_, ts := newTestServerOpts(t, Config{}, reg, func(o *runs.Options) { o.MaxRunning, o.MaxQueued = 1, 1 })
	chainID := createChain(t, ts, gateDoc)
	first := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{}`).json(t)["run_id"].(string)
	second := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{}`)
	if second.json(t)["status"] != "queued" {
		t.Fatalf("second run: %s", second.body)
	}
	queued := second.json(t)["run_id"].(string)

	r := do(t, ts, "GET", "/v1/runs/"+queued+"/nodes/g/why", nil)
	a := getWhy(t, r)
	if a.Status != "not_reached" || a.RunStatus != "queued" || !strings.Contains(string(r.body), "the run has not started yet") {
		t.Errorf("queued run: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/runs/"+queued+"/nodes/ghost/why", nil)
	wantStatus(t, r, http.StatusNotFound)
	if r.errCode(t) != "unknown_node" {
		t.Errorf("queued run, unknown node: %s", r.body)
	}
	// the running run's node has not finished: not reached yet
	testutilEventuallyRunning(t, ts, first)
	r = do(t, ts, "GET", "/v1/runs/"+first+"/nodes/g/why", nil)
	if a := getWhy(t, r); a.Status != "not_reached" || a.RunStatus != "running" {
		t.Errorf("running run: %s", r.body)
	}
	open()
	waitRun(t, ts, first)
	if a := getWhy(t, do(t, ts, "GET", "/v1/runs/"+first+"/nodes/g/why", nil)); a.Status != "done" {
		t.Errorf("finished run: %+v", a)
	}
}

// testutilEventuallyRunning waits until the run has written its start entry.
func testutilEventuallyRunning(t *testing.T, ts *httptest.Server, id string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		r := do(t, ts, "GET", "/v1/runs/"+id+"/nodes/g/why", nil)
		if r.status != http.StatusOK || strings.Contains(string(r.body), "has not started yet") {
			return fmt.Errorf("not started: %s", r.body)
		}
		return nil
	})
}

// The API's why of a node skipped behind a router carries how the router
// chose (chose, tests with their reads), in the documented shape.
func TestRunNodeWhyRouterCause(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	chainID := createChain(t, ts, `{"name":"whyroute","nodes":[
		{"node_id":"route","kind":"condition","cases":[{"handle":"hot","when":"input.level == 'high'"}]},
		{"node_id":"hot","kind":"tool","name":"echo"},{"node_id":"cold","kind":"tool","name":"echo"}],
		"edges":[{"source":"route","target":"hot","label":"hot"},{"source":"route","target":"cold","label":"default"}]}`)
	r := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{"input":{"level":"low"}}`)
	runID := r.json(t)["run_id"].(string)
	if m := waitRun(t, ts, runID); m["status"] != "completed" {
		t.Fatalf("run: %v", m)
	}
	var a struct {
		Causes []struct {
			Edge  string        `json:"edge"`
			Chose string        `json:"chose"`
			Tests []whyStepJSON `json:"tests"`
		} `json:"causes"`
	}
	res := do(t, ts, "GET", "/v1/runs/"+runID+"/nodes/hot/why", nil)
	wantStatus(t, res, http.StatusOK)
	if err := json.Unmarshal(res.body, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Causes) != 1 || a.Causes[0].Chose != "default" || len(a.Causes[0].Tests) != 1 {
		t.Fatalf("causes: %s", res.body)
	}
	tst := a.Causes[0].Tests[0]
	if tst.Expr != "input.level == 'high'" || tst.Result != "false" || len(tst.Reads) != 1 || tst.Reads[0].Path != "input.level" || tst.Reads[0].Value != `"low"` {
		t.Errorf("the router's test: %+v", tst)
	}
}
