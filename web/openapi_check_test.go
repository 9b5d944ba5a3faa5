package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Every response the web tests see is checked against web/openapi.json:
// newTestServer wraps the handler with apiChecker.wrap, which matches the
// request to the document's operation, requires the answered status to be
// listed there and validates a JSON body (or each frame of an event stream)
// against the schema of that status. So a field renamed, added or dropped
// in a handler fails the test that saw it until the document says so.
//
// The document's object schemas are made strict for this check
// (unevaluatedProperties: false where no additionalProperties is given), so
// an undocumented field is drift too.

const openAPIDocURL = "mem://studio/openapi.json"

type specOp struct {
	method, template string
	re               *regexp.Regexp
	literal          int // literal segments: /v1/chains/import beats /v1/chains/{id}
	responses        map[string]any
	pointer          string // JSON pointer of the operation in the document
}

type apiChecker struct {
	ops []specOp

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

var (
	checkerOnce sync.Once
	checker     *apiChecker
	checkerErr  error
)

func openAPIChecker() (*apiChecker, error) {
	checkerOnce.Do(func() { checker, checkerErr = newAPIChecker(openAPISpec) })
	return checker, checkerErr
}

func newAPIChecker(spec []byte) (*apiChecker, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1") {
		return nil, fmt.Errorf("openapi.json: version %q, want 3.1 (JSON Schema 2020-12 schemas)", v)
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	strictSchemas(doc, composedRefs(doc), schemas)

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(openAPIDocURL, doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	ch := &apiChecker{compiler: c, compiled: map[string]*jsonschema.Schema{}}
	paths, _ := doc["paths"].(map[string]any)
	for tmpl, item := range paths {
		segs := strings.Split(tmpl, "/")
		lit := 0
		for i, s := range segs {
			if strings.HasPrefix(s, "{") {
				segs[i] = "[^/]+"
			} else {
				segs[i] = regexp.QuoteMeta(s)
				lit++
			}
		}
		re := regexp.MustCompile("^" + strings.Join(segs, "/") + "$")
		for method, op := range item.(map[string]any) {
			o, ok := op.(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			res, _ := o["responses"].(map[string]any)
			ch.ops = append(ch.ops, specOp{
				method: strings.ToUpper(method), template: tmpl, re: re, literal: lit, responses: res,
				pointer: "/paths/" + escapePointer(tmpl) + "/" + method,
			})
		}
	}
	sort.Slice(ch.ops, func(i, j int) bool { return ch.ops[i].literal > ch.ops[j].literal })
	return ch, nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// composedRefs are the component schemas an allOf extends: they stay open
// (the schema composing them is made strict instead).
func composedRefs(x any) map[string]bool {
	out := map[string]bool{}
	var walk func(any)
	walk = func(x any) {
		switch v := x.(type) {
		case map[string]any:
			if all, ok := v["allOf"].([]any); ok {
				for _, s := range all {
					if m, ok := s.(map[string]any); ok {
						if ref, ok := m["$ref"].(string); ok {
							out[strings.TrimPrefix(ref, "#/components/schemas/")] = true
						}
					}
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(x)
	return out
}

func strictSchemas(doc map[string]any, open map[string]bool, schemas map[string]any) {
	var walk func(x any, inAllOf bool)
	walk = func(x any, inAllOf bool) {
		switch v := x.(type) {
		case map[string]any:
			_, props := v["properties"]
			_, all := v["allOf"]
			_, addl := v["additionalProperties"]
			_, uneval := v["unevaluatedProperties"]
			if (props || all) && !addl && !uneval && !inAllOf {
				v["unevaluatedProperties"] = false
			}
			for k, e := range v {
				if k == "allOf" {
					for _, s := range e.([]any) {
						walk(s, true)
					}
					continue
				}
				if k == "properties" {
					for _, p := range e.(map[string]any) {
						walk(p, false)
					}
					continue
				}
				walk(e, false)
			}
		case []any:
			for _, e := range v {
				walk(e, false)
			}
		}
	}
	for name, s := range schemas {
		walk(s, open[name])
	}
	for k, v := range doc {
		if k != "components" {
			walk(v, false)
		}
	}
}

func (ch *apiChecker) schema(loc string) (*jsonschema.Schema, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if s, ok := ch.compiled[loc]; ok {
		return s, nil
	}
	s, err := ch.compiler.Compile(openAPIDocURL + "#" + loc)
	if err != nil {
		return nil, err
	}
	ch.compiled[loc] = s
	return s, nil
}

func (ch *apiChecker) op(method, path string) *specOp {
	for i := range ch.ops {
		o := &ch.ops[i]
		if o.method == method && o.re.MatchString(path) {
			return o
		}
	}
	return nil
}

// check validates one exchange; it returns "" when the response agrees with
// the document.
func (ch *apiChecker) check(method, path string, status int, header http.Header, body []byte) string {
	o := ch.op(method, path)
	if o == nil {
		// Unknown routes (404/405 from the router), pages and static files
		// are not part of the API document.
		return ""
	}
	code := strconv.Itoa(status)
	res, ok := o.responses[code]
	if !ok {
		if res, ok = o.responses["default"]; !ok {
			return fmt.Sprintf("%s %s (%s) answered %d, which the document does not list", method, path, o.template, status)
		}
		code = "default"
	}
	ptr := o.pointer + "/responses/" + code
	if m, _ := res.(map[string]any); m != nil {
		if ref, ok := m["$ref"].(string); ok {
			ptr = strings.TrimPrefix(ref, "#")
			res = ch.resolve(ptr)
		}
	}
	resMap, _ := res.(map[string]any)
	content, _ := resMap["content"].(map[string]any)
	if len(body) == 0 {
		if len(content) > 0 && method != "HEAD" && status != http.StatusNotModified {
			return fmt.Sprintf("%s %s answered %d with no body; the document gives it one", method, path, status)
		}
		return ""
	}
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if _, ok := content[mt]; !ok {
		return fmt.Sprintf("%s %s answered %d as %q, which the document does not list for that status", method, path, status, mt)
	}
	loc := ptr + "/content/" + escapePointer(mt) + "/schema"
	var inst any
	var err error
	switch mt {
	case "application/json":
		inst, err = jsonschema.UnmarshalJSON(bytes.NewReader(body))
	case "text/event-stream":
		inst, err = sseFrames(body)
	case "application/x-ndjson":
		inst, err = ndjsonLines(body)
	default:
		return ""
	}
	if err != nil {
		return fmt.Sprintf("%s %s answered %d with a %s body that does not parse: %v", method, path, status, mt, err)
	}
	s, err := ch.schema(loc)
	if err != nil {
		return fmt.Sprintf("openapi.json: compile %s: %v", loc, err)
	}
	if err := s.Validate(inst); err != nil {
		b := body
		if len(b) > 1500 {
			b = append(b[:1500:1500], "…"...)
		}
		return fmt.Sprintf("%s %s answered %d: the body does not match %s:\n%v\nbody: %s", method, path, status, loc, err, b)
	}
	return ""
}

// checkRequest validates the JSON body of a request the server accepted
// against the operation's request schema: what the server takes, the
// document must take too.
func (ch *apiChecker) checkRequest(r *http.Request, body []byte) string {
	o := ch.op(r.Method, r.URL.EscapedPath())
	if o == nil || len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "" && mt != "application/json" {
		return ""
	}
	loc := o.pointer + "/requestBody/content/application~1json/schema"
	if ch.resolve(loc) == nil {
		return fmt.Sprintf("%s %s accepted a JSON body; the document describes none", r.Method, o.template)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return "" // not JSON at all: the answer said so, or the body was not read
	}
	s, err := ch.schema(loc)
	if err != nil {
		return fmt.Sprintf("openapi.json: compile %s: %v", loc, err)
	}
	if err := s.Validate(inst); err != nil {
		b := body
		if len(b) > 1500 {
			b = append(b[:1500:1500], "…"...)
		}
		return fmt.Sprintf("%s %s accepted a body that does not match %s:\n%v\nbody: %s", r.Method, o.template, loc, err, b)
	}
	return ""
}

func (ch *apiChecker) resolve(ptr string) any {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(openAPISpec))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil
	}
	var cur any = doc
	for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		m, _ := cur.(map[string]any)
		cur = m[p]
	}
	return cur
}

// sseFrames parses a text/event-stream body into the frames the document's
// stream schemas describe: [{id?, event, data}] with data decoded as JSON.
// Comment lines (heartbeats) are not frames.
func sseFrames(body []byte) (any, error) {
	var frames []any
	frame := map[string]any{}
	var data []string
	flush := func() error {
		if len(data) == 0 && len(frame) == 0 {
			return nil
		}
		if len(data) > 0 {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(strings.Join(data, "\n")))
			if err != nil {
				return fmt.Errorf("frame %d: data: %w", len(frames), err)
			}
			frame["data"] = v
		}
		frames = append(frames, frame)
		frame, data = map[string]any{}, nil
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if err := flush(); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, ":"):
		default:
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "data":
				data = append(data, v)
			case "id", "event":
				frame[k] = v
			case "retry":
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, fmt.Errorf("retry %q", v)
				}
				frame[k] = json.Number(strconv.Itoa(n))
			default:
				return nil, fmt.Errorf("unknown field %q", k)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if frames == nil {
		frames = []any{}
	}
	return frames, sc.Err()
}

func ndjsonLines(body []byte) (any, error) {
	out := []any{}
	for i, line := range bytes.Split(bytes.TrimRight(body, "\n"), []byte("\n")) {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// recorder passes a response through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	over   bool
}

const recordLimit = 32 << 20

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.body.Len()+len(b) > recordLimit {
		r.over = true
	} else {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// checkAPI wraps h so that every response it gives in test t is checked
// against the document; the mismatches fail t when its servers are closed.
func checkAPI(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	ch, err := openAPIChecker()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var problems []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("OpenAPI drift: %s", p)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		var reqBody bytes.Buffer
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(io.LimitReader(r.Body, recordLimit), &reqBody), r.Body}
		}
		h.ServeHTTP(rec, r)
		if rec.over || r.Context().Err() != nil {
			return // too big to keep, or cut off by the client
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		p := ch.check(r.Method, r.URL.EscapedPath(), status, w.Header(), rec.body.Bytes())
		if p == "" && status < 300 {
			p = ch.checkRequest(r, reqBody.Bytes())
		}
		if p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
	})
}

// The checker itself: it passes answers the document describes and names
// each kind of drift.
func TestOpenAPICheckerCatchesDrift(t *testing.T) {
	t.Parallel()
	ch, err := openAPIChecker()
	if err != nil {
		t.Fatal(err)
	}
	js := http.Header{"Content-Type": {"application/json; charset=UTF-8"}}
	sse := http.Header{"Content-Type": {"text/event-stream"}}
	started := `{"run_id":"r","status":"running","chain_id":"c","chain_version":1}`
	for _, tc := range []struct {
		name, method, path string
		status             int
		header             http.Header
		body, want         string
	}{
		{"described", "POST", "/v1/chains/c/runs", 202, js, started, ""},
		{"unlisted status", "POST", "/v1/chains/c/runs", 418, js, `{}`, "does not list"},
		{"undocumented field", "POST", "/v1/chains/c/runs", 202, js, started[:len(started)-1] + `,"extra":1}`, "/extra"},
		{"missing field", "POST", "/v1/chains/c/runs", 202, js, `{"run_id":"r","status":"running","chain_id":"c"}`, "chain_version"},
		{"wrong enum", "POST", "/v1/chains/c/runs", 202, js, `{"run_id":"r","status":"done","chain_id":"c","chain_version":1}`, "/status"},
		{"undocumented media type", "GET", "/v1/chains/c", 200, http.Header{"Content-Type": {"text/plain"}}, "x", "text/plain"},
		{"no body where one is due", "GET", "/v1/chains/c", 200, js, "", "no body"},
		{"304 has none", "GET", "/v1/chains/c", 304, http.Header{}, "", ""},
		{"stream frame", "GET", "/v1/runs/r/events", 200, sse, "event: queued\ndata: {\"run_id\":\"r\",\"status\":\"queued\",\"position\":1}\n\n: heartbeat\n\n", ""},
		{"bad stream frame", "GET", "/v1/runs/r/events", 200, sse, "id: 1\nevent: start\ndata: {\"run_id\":\"r\"}\n\n", "validation failed"},
		{"unknown route", "GET", "/v1/nope", 404, js, `{}`, ""},
	} {
		got := ch.check(tc.method, tc.path, tc.status, tc.header, []byte(tc.body))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want a problem containing %q", tc.name, got, tc.want)
		}
	}
	req := httptestRequest("POST", "/v1/chains", `{"name":"x","nodes":[],"surprise":true}`)
	if p := ch.checkRequest(req, []byte(`{"name":"x","nodes":[],"surprise":true}`)); !strings.Contains(p, "does not match") {
		t.Errorf("an accepted body the document refuses: %q", p)
	}
	for _, body := range []string{`{"name":"x","nodes":[]}`, `{"type":"chain/req","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`} {
		if p := ch.checkRequest(httptestRequest("POST", "/v1/chains", body), []byte(body)); p != "" {
			t.Errorf("%s: %s", body, p)
		}
	}
}

func httptestRequest(method, path, body string) *http.Request {
	r, _ := http.NewRequest(method, "http://studio"+path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}
