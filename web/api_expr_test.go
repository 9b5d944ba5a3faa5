package web

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/exprhelp"
	"github.com/chainstudio/studio/web/api"
)

const exprChainDoc = `{"name":"%s","nodes":[
	{"node_id":"fetch","kind":"tool","name":"echo","input_map":{"items":"input.items","category":"input.category"}},
	{"node_id":"route","kind":"branch","condition":"length(output.items) > ` + "`1`" + `"},
	{"node_id":"done","kind":"tool","name":"echo"},
	{"node_id":"other","kind":"tool","name":"echo"}],
	"edges":[{"source":"fetch","target":"route"},{"source":"route","target":"done","label":"true"},{"source":"route","target":"other","label":"false"}]}`

// exprChain saves the chain above and runs it once, so that previews have
// data.
func exprChain(t *testing.T, name string) (id string, ts func(method, path string, body any) resp) {
	t.Helper()
	_, srv := newTestServer(t)
	id = createChain(t, srv, fmt.Sprintf(exprChainDoc, name))
	call := func(method, path string, body any) resp { return do(t, srv, method, path, body) }
	r := call("POST", "/v1/chains/"+id+"/runs", `{"input":{"items":[{"sku":"a1","qty":2},{"sku":"b2","qty":1}],"category":"billing"}}`)
	wantStatus(t, r, 202)
	waitRun(t, srv, r.json(t)["run_id"].(string))
	return id, call
}

func TestExprContextOffersNamesUpstreamAndLastRunFields(t *testing.T) {
	t.Parallel()
	id, call := exprChain(t, "expr-context")
	r := call("GET", "/v1/chains/"+id+"/expr/context?node=route&field=condition", nil)
	wantStatus(t, r, 200)
	m := r.json(t)
	var names []string
	for _, n := range m["names"].([]any) {
		names = append(names, n.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, ","); got != "output,input,state,node_results,trigger" {
		t.Errorf("names = %s", got)
	}
	if got := fmt.Sprint(m["upstream"]); got != "[fetch]" {
		t.Errorf("upstream = %s, want [fetch] (done and other run after route)", got)
	}
	sh := m["shapes"].(map[string]any)
	out := sh["output"].(map[string]any)
	keys := out["keys"].(map[string]any)
	if keys["items"].(map[string]any)["type"] != "array" || keys["category"].(map[string]any)["type"] != "string" {
		t.Errorf("output shape = %v", out)
	}
	elem := keys["items"].(map[string]any)["elem"].(map[string]any)["keys"].(map[string]any)
	if _, ok := elem["sku"]; !ok {
		t.Errorf("items[0] shape = %v, want sku", elem)
	}
	if _, ok := sh["fetch"]; !ok {
		t.Errorf("no shape for upstream node fetch: %v", sh)
	}
	fns := m["functions"].([]any)
	if len(fns) < 20 || !strings.Contains(fmt.Sprint(fns), "length(array|string|object) → number") {
		t.Errorf("functions = %v", fns)
	}

	// A map body's input_map offers item and index; a branch's condition does not.
	r = call("GET", "/v1/chains/"+id+"/expr/context?node=done&field="+url.QueryEscape("input_map.x"), nil)
	wantStatus(t, r, 200)
	if s := fmt.Sprint(r.json(t)["names"]); strings.Contains(s, "item") || !strings.Contains(s, "steps") {
		t.Errorf("input_map names = %s", s)
	}
}

func TestExprContextRejectsBadTargets(t *testing.T) {
	t.Parallel()
	id, call := exprChain(t, "expr-context-bad")
	for _, tt := range []struct {
		q      string
		status int
		code   string
	}{
		{"node=route", 400, "bad_parameter"},                                    // no field
		{"field=condition", 400, "bad_parameter"},                               // neither node nor edge
		{"node=nosuch&field=condition", 404, "not_found"},                       // unknown node
		{"node=fetch&field=condition", 422, "bad_field"},                        // a tool has no condition
		{"edge=nosuch&field=condition", 422, "bad_field"},                       // unknown edge
		{"node=route&edge=x&field=condition", 400, "bad_parameter"},             // both
		{"node=fetch&field=" + url.QueryEscape("input_map."), 422, "bad_field"}, // no key
	} {
		r := call("GET", "/v1/chains/"+id+"/expr/context?"+tt.q, nil)
		if r.status != tt.status || r.errCode(t) != tt.code {
			t.Errorf("%s: %d %s, want %d %s: %s", tt.q, r.status, r.errCode(t), tt.status, tt.code, r.body)
		}
	}
	if r := call("GET", "/v1/chains/nosuch/expr/context?node=a&field=condition", nil); r.status != 404 {
		t.Errorf("unknown chain: %d", r.status)
	}
}

func TestExprPreviewEvaluatesAgainstTheLastRun(t *testing.T) {
	t.Parallel()
	id, call := exprChain(t, "expr-preview")
	preview := func(field, src string) resp {
		return call("POST", "/v1/chains/"+id+"/expr/preview", map[string]any{"node": "route", "field": field, "expr": src})
	}
	r := preview("condition", "output.items[0].sku")
	wantStatus(t, r, 200)
	if m := r.json(t); m["value"] != `"a1"` || m["type"] != "string" || m["run_id"] == "" {
		t.Errorf("preview = %v", m)
	}
	r = preview("condition", "length(output.items) > `1`")
	if m := r.json(t); m["value"] != "true" {
		t.Errorf("condition preview = %v, want true (2 items)", m)
	}
	// Reading an upstream node by id.
	if m := preview("condition", "fetch.output.category").json(t); m["value"] != `"billing"` {
		t.Errorf("fetch.output.category = %v", m)
	}

	// An edge's condition reads its source's output (a branch passes its input on).
	r = call("POST", "/v1/chains/"+id+"/expr/preview", map[string]any{"edge": "route->done", "field": "condition", "expr": "output.category"})
	if m := r.json(t); m["value"] != `"billing"` {
		t.Errorf("edge condition preview = %s", r.body)
	}

	// A typo in a name: the value is null and the preview says what was meant.
	m := preview("condition", "outptu.items").json(t)
	w := fmt.Sprint(m["warnings"])
	if m["value"] != "null" || !strings.Contains(w, "did you mean output?") {
		t.Errorf("typo preview = %v", m)
	}
	// A typo in a function: a syntax error with the position and the suggestion.
	// (The expression's faults are the preview's answer: 200 with "error".)
	r = preview("condition", "a && lenght(output.items)")
	wantStatus(t, r, 200)
	pe, _ := r.json(t)["error"].(map[string]any)
	if pe["code"] != "expression_syntax" || !strings.Contains(fmt.Sprint(pe["message"]), "did you mean length()?") || pe["column"] != float64(6) || pe["pos"] != float64(5) {
		t.Errorf("function typo = %s", r.body)
	}
	// A runtime error: which function and which argument.
	r = preview("condition", "abs(output.category)")
	wantStatus(t, r, 200)
	pe, _ = r.json(t)["error"].(map[string]any)
	if pe["code"] != "expression_eval" || !strings.Contains(fmt.Sprint(pe["message"]), "abs") {
		t.Errorf("eval error = %s", r.body)
	}
	// The bare-word comparison comes with its fix as a whole expression.
	m = preview("condition", "output.category == billing").json(t)
	fixes := m["fixes"].([]any)
	if len(fixes) != 1 || fixes[0].(map[string]any)["expr"] != "output.category == 'billing'" {
		t.Fatalf("fixes = %v", m["fixes"])
	}
	if w := m["warnings"].([]any); len(w) != 0 {
		t.Errorf("warnings = %v; the fix already explains billing", w)
	}
	if m := preview("condition", "output.category == 'billing'").json(t); m["value"] != "true" || len(m["fixes"].([]any)) != 0 {
		t.Errorf("fixed preview = %v", m)
	}
}

func TestExprPreviewBounds(t *testing.T) {
	t.Parallel()
	id, call := exprChain(t, "expr-preview-bounds")
	path := "/v1/chains/" + id + "/expr/preview"
	// A long result is cut to the preview size and says so.
	big := "[" + strings.Repeat("output.items,", 400) + "output.items]"
	r := call("POST", path, map[string]any{"node": "route", "field": "condition", "expr": big})
	wantStatus(t, r, 200)
	if m := r.json(t); m["truncated"] != true || len(m["value"].(string)) != exprhelp.PreviewBytes {
		t.Errorf("big result: truncated=%v len=%d", m["truncated"], len(m["value"].(string)))
	}
	// An expression over the parser's limit is refused before parsing.
	r = call("POST", path, map[string]any{"node": "route", "field": "condition", "expr": strings.Repeat("a", 20000)})
	if r.status != 413 {
		t.Errorf("long expr: %d %s", r.status, r.body)
	}
	// A body over the preview's limit.
	r = call("POST", path, `{"node":"route","field":"condition","expr":"`+strings.Repeat("a", api.ExprBodyLimit)+`"}`)
	if r.status != 413 {
		t.Errorf("big body: %d", r.status)
	}
	// An evaluation that builds too much stops at the preview's budget.
	r = call("POST", path, map[string]any{"node": "route", "field": "condition",
		"expr": "[output.items, output.items][].[@, @, @, @, @, @, @, @][][].[@, @, @, @, @, @, @, @][][].[@, @, @, @, @, @, @, @][][].[@, @, @, @, @, @, @, @][][].[@, @, @, @, @, @, @, @][][].[@, @, @, @, @, @, @, @][]"})
	if pe, _ := r.json(t)["error"].(map[string]any); r.status != 200 || pe["code"] != "expression_eval" || !strings.Contains(fmt.Sprint(pe["message"]), "budget") {
		t.Errorf("budget: %d %s", r.status, r.body)
	}
	// Malformed requests.
	for _, body := range []string{`{"node":"route","field":"condition"}`, `{"node":"route","field":"condition","expr":"a","nope":1}`, `{bad`} {
		if r := call("POST", path, body); r.status != 400 {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
}

func TestExprPreviewWithoutARun(t *testing.T) {
	t.Parallel()
	_, srv := newTestServer(t)
	id := createChain(t, srv, fmt.Sprintf(exprChainDoc, "expr-norun"))
	r := do(t, srv, "POST", "/v1/chains/"+id+"/expr/preview", map[string]any{"node": "route", "field": "condition", "expr": "output.items"})
	wantStatus(t, r, 200)
	if m := r.json(t); m["value"] != "null" || m["run_id"] != "" || m["note"] == nil {
		t.Errorf("no run = %v", m)
	}
}

// BenchmarkExprPreview500 is one keystroke's preview on a 500-node chain
// that ran: read the chain, find the field, evaluate over the cached run.
func BenchmarkExprPreview500(b *testing.B) {
	_, srv := newTestServer(b)
	var sb strings.Builder
	sb.WriteString(`{"name":"bench-expr","nodes":[`)
	for i := 0; i < 500; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		from := "input.v"
		if i > 0 {
			from = fmt.Sprintf("n%d.output.v", i-1)
		}
		fmt.Fprintf(&sb, `{"node_id":"n%d","kind":"tool","name":"echo","input_map":{"v":%q}}`, i, from)
	}
	sb.WriteString(`],"edges":[`)
	for i := 1; i < 500; i++ {
		if i > 1 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"source":"n%d","target":"n%d"}`, i-1, i)
	}
	sb.WriteString(`]}`)
	id := createChain(b, srv, sb.String())
	r := do(b, srv, "POST", "/v1/chains/"+id+"/runs", `{"input":{"v":[1,2,3]}}`)
	runID := r.json(b)["run_id"].(string)
	waitRun(b, srv, runID)
	body := map[string]any{"node": "n499", "field": "input_map.v", "expr": "n498.output.v[1]", "run_id": runID}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := do(b, srv, "POST", "/v1/chains/"+id+"/expr/preview", body)
		if r.status != 200 || !strings.Contains(string(r.body), `"value":"2"`) {
			b.Fatalf("%d %s", r.status, r.body)
		}
	}
}
