package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/chainstudio/studio/web/pages"
)

// timelineDoc maps a labelled body over input.items and joins the results,
// so a run has progress events, labels and a node to re-run from.
const timelineDoc = `{"name":"%s","nodes":[
	{"node_id":"each","kind":"map","label":"Each item","items_path":"input.items","map_node":"body","parallel_failure_mode":"continue"},
	{"node_id":"body","kind":"tool","name":"echo","label":"Echo <it>","input_map":{"item":"item"}},
	{"node_id":"join","kind":"tool","name":"echo","input_map":{"n":"length(each.output)"}}],
	"edges":[{"source":"each","target":"join"}]}`

var timelineOL = regexp.MustCompile(`(?s)<ol id="timeline" class="timeline">(.*?)</ol>`)

// pageTimeline is the inner markup of the timeline a run's page renders at
// first.
func pageTimeline(t *testing.T, ts *httptest.Server, id string) string {
	t.Helper()
	r := do(t, ts, "GET", "/runs/"+id, nil)
	wantStatus(t, r, http.StatusOK)
	m := timelineOL.FindStringSubmatch(string(r.body))
	if m == nil {
		t.Fatalf("the page of run %s has no timeline", id)
	}
	return m[1]
}

// The timeline fragment the run page appends for live events is the markup
// the page's first render has for the same events, page after page.
func TestTimelineFragmentIsTheFirstRender(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(timelineDoc, "timeline"))
	items := make([]string, pages.TimelinePageEvents/2+20) // two items' events each: more than a fragment holds
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	run := startAndWait(t, ts, id, `{"items":[`+strings.Join(items, ",")+`]}`)
	r := do(t, ts, "POST", "/v1/runs/"+run+"/rerun", `{"from_node":"join"}`)
	wantStatus(t, r, http.StatusAccepted)
	rerun := r.json(t)["run_id"].(string)
	waitRun(t, ts, rerun)

	for _, id := range []string{run, rerun} {
		page := pageTimeline(t, ts, id)
		var frags strings.Builder
		after, fragments := "0", 0
		for {
			r := do(t, ts, "GET", "/runs/"+id+"/timeline?after="+after, nil)
			wantStatus(t, r, http.StatusOK)
			frag := string(r.body)
			if frag == "" {
				break
			}
			if n := strings.Count(frag, "<li "); n > pages.TimelinePageEvents {
				t.Fatalf("a fragment of %d entries, over %d", n, pages.TimelinePageEvents)
			}
			frags.WriteString(frag)
			seqs := regexp.MustCompile(`data-seq="(\d+)"`).FindAllStringSubmatch(frag, -1)
			after = seqs[len(seqs)-1][1]
			fragments++
		}
		if frags.String() != page {
			t.Fatalf("run %s: the fragments (%d) differ from the page's timeline:\nfragments %.600s\npage      %.600s", id, fragments, frags.String(), page)
		}
		if id != run {
			continue
		}
		if fragments < 2 {
			t.Errorf("run %s: %d fragment(s); want the bound to split it", id, fragments)
		}
		for _, want := range []string{fmt.Sprintf(`data-progress="1/%d"`, len(items)), `<span class="node-label">Echo &lt;it&gt;</span>`, `class="ev ph-done"`} {
			if !strings.Contains(page, want) {
				t.Errorf("run %s: the timeline lacks %q", id, want)
			}
		}
	}
	if page := pageTimeline(t, ts, rerun); !strings.Contains(page, "ran again") || !strings.Contains(page, `class="ev ph-done reused"`) {
		t.Errorf("the re-run's timeline marks neither what ran again nor what was reused: %.600s", page)
	}

	wantStatus(t, do(t, ts, "GET", "/runs/"+run+"/timeline?after=-1", nil), http.StatusBadRequest)
	wantStatus(t, do(t, ts, "GET", "/runs/nope/timeline", nil), http.StatusNotFound)
}
