package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestSchemaValidator(t *testing.T) {
	t.Parallel()
	full := `{"type":"object","required":["lead","tags"],"properties":{
		"lead":{"type":"object","required":["score"],"properties":{"score":{"type":"integer"},"tier":{"enum":["gold","silver",3]}}},
		"tags":{"type":"array","items":{"type":"string"}},
		"note":{"type":["string","null"]},
		"ratio":{"type":"number","minimum":0,"maximum":1},
		"any":{"oneOf":[{"type":"string"}],"$ref":"#/x","format":"email","pattern":"^a"},
		"flag":{"type":"boolean"}},
		"additionalProperties":false, "allOf":[{"required":["zzz"]}]}`
	cases := []struct {
		name   string
		schema string
		value  string
		want   []string // "path: message" fragments, in order; empty = valid
	}{
		{"valid", full, `{"lead":{"score":8,"tier":"gold"},"tags":["a","b"],"note":null,"ratio":0.5,"flag":false,"extra":1}`, nil},
		{"3.0 is an integer", full, `{"lead":{"score":3.0},"tags":[]}`, nil},
		{"3.5 is not", full, `{"lead":{"score":3.5},"tags":[]}`, []string{"lead.score: want integer, got number 3.5"}},
		{"bool is not an integer", full, `{"lead":{"score":true},"tags":[]}`, []string{"lead.score: want integer, got boolean true"}},
		{"bool is not a number", full, `{"lead":{"score":1},"tags":[],"ratio":false}`, []string{"ratio: want number, got boolean false"}},
		{"every error with a path", full, `{"lead":{"tier":"bronze"},"tags":["a",2,"c",null],"note":5}`, []string{
			`lead.score: is required but missing`, `lead.tier: "bronze" is not one of the allowed values ["gold","silver",3]`,
			`note: want string or null, got integer 5`, `tags[1]: want string, got integer 2`, `tags[3]: want string, got null`}},
		{"required at the root", full, `{}`, []string{"lead: is required but missing", "tags: is required but missing"}},
		{"root type", full, `[1]`, []string{"(root): want object, got array"}},
		{"enum numbers compare as numbers", `{"enum":[1,2]}`, `2.0`, nil},
		{"enum objects", `{"enum":[{"a":1}]}`, `{"a":2}`, []string{`(root): {"a":2} is not one of the allowed values [{"a":1}]`}},
		{"unknown keywords ignored", `{"type":"string","minLength":100,"format":"date"}`, `"x"`, nil},
		{"items nested", `{"type":"array","items":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}}`, `[{"id":1},{"id":"2"},{}]`,
			[]string{`[1].id: want integer, got string "2"`, `[2].id: is required but missing`}},
		{"odd property names", `{"type":"object","properties":{"first name":{"type":"string"}}}`, `{"first name":1}`, []string{`["first name"]: want string, got integer 1`}},
		{"shorthand", `{"score":{"type":"integer"},"urgent":{"type":"boolean"}}`, `{"score":"8"}`, []string{`score: want integer, got string "8"`}},
		{"shorthand: nothing required", `{"score":{"type":"integer"}}`, `{}`, nil},
		{"shorthand: must be an object", `{"score":{"type":"integer"}}`, `8`, []string{"(root): want object, got integer 8"}},
		{"shorthand property named type", `{"type":{"type":"string"}}`, `{"type":3}`, []string{"type: want string, got integer 3"}},
		{"full without type", `{"properties":{"a":{"type":"integer"}},"required":["a"]}`, `{"a":true}`, []string{"a: want integer, got boolean true"}},
		{"schema true/false", `{"type":"object","properties":{"a":true,"b":false}}`, `{"a":1,"b":2}`, []string{"b: no value is allowed here (schema false)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CompileSchema(jsonOf(t, tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			errs := s.Validate(jsonOf(t, tc.value))
			var got []string
			for _, e := range errs {
				got = append(got, e.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			var ve *ValidationError
			if err := s.Check(jsonOf(t, tc.value)); (err == nil) != (len(tc.want) == 0) || (err != nil && !errors.As(err, &ve)) {
				t.Fatalf("Check: %v", err)
			}
		})
	}
}

func TestSchemaNeverRewritten(t *testing.T) {
	t.Parallel()
	full := jsonOf(t, `{"type":"object","properties":{"a":{"type":"integer"}},"oneOf":[{}]}`)
	s, err := CompileSchema(full)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(s.Normalized())
	b, _ := json.Marshal(full)
	if string(a) != string(b) {
		t.Fatalf("full schema rewritten: %s", a)
	}
	short := jsonOf(t, `{"a":{"type":"integer"}}`)
	s, _ = CompileSchema(short)
	a, _ = json.Marshal(s.Normalized())
	if string(a) != `{"properties":{"a":{"type":"integer"}},"type":"object"}` {
		t.Fatalf("shorthand: %s", a)
	}
}

func TestSchemaCompileErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`[1]`: "must be a map",
		`{"type":"object","properties":{"a":{"type":"int"}}}`:                      `a: type "int" is not a type this validator knows`,
		`{"type":"object","properties":{"a":{"required":"x"}}}`:                    "a: required must be a list",
		`{"type":"object","properties":{"a":{"enum":"x"}}}`:                        "a: enum must be a list",
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":7}}}}`: "a[]: type must be a type name",
		`{"score":"integer"}`: "the schema of score must be a map",
	} {
		_, err := CompileSchema(jsonOf(t, src))
		wantErrContains(t, err, want)
	}
}

func TestExtractJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		answer string
		want   string // JSON, or "error: fragment"
	}{
		{"Prose.\n```json\n{\"a\":1}\n```", `{"a":1}`},
		{"```json\n{\"a\":1}\n```\nthen\n```json\n{\"a\":2}\n```\nbye", `{"a":2}`},
		{"```json\n{\"a\":1}\n```\n```python\nprint(1)\n```", `{"a":1}`},
		{"```\n{\"a\":3}\n```", `{"a":3}`},
		{"  ```JSON  \n[1,2]\n  ```", `[1,2]`},
		{"~~~json\n{\"t\":1}\n~~~", `{"t":1}`},
		{"```json\n{\"cut\": 1}", `{"cut":1}`}, // unclosed final fence
		{"  {\"bare\": true}  ", `{"bare":true}`},
		{"[1, 2]", `[1,2]`},
		{"inline ```json {\"a\":1}``` is not a fence", "error: no ```json block"},
		{"just prose", "error: no ```json block and is not bare JSON"},
		{"42", "error: no ```json block"},
		{"```json\n{\"a\":1,}\n```", "error: the last ```json block is not valid JSON"},
		{"```json\n{\"a\":1} trailing\n```", "error: text follows the JSON value"},
		{"```json\n\n```", "error: it is empty"},
		{"{not json", "error: looks like bare JSON but does not parse"},
	}
	for _, tc := range cases {
		v, err := ExtractJSON(tc.answer)
		if strings.HasPrefix(tc.want, "error: ") {
			wantErrContains(t, err, strings.TrimPrefix(tc.want, "error: "))
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.answer, err)
		}
		b, _ := json.Marshal(v)
		if string(b) != tc.want {
			t.Fatalf("%q: got %s want %s", tc.answer, b, tc.want)
		}
	}
}

func TestModelClient(t *testing.T) {
	t.Parallel()
	if Endpoint("http://h:8080/v1") != "http://h:8080/v1/chat/completions" || Endpoint("http://h/v1/") != "http://h/v1/chat/completions" ||
		Endpoint("http://h/openai/deployments/x/chat/completions?api-version=1") != "http://h/openai/deployments/x/chat/completions?api-version=1" {
		t.Fatal("Endpoint")
	}
	var gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.Path
		_, _ = io.ReadAll(r.Body) // lets the server notice a client that gives up
		switch {
		case strings.HasSuffix(r.URL.Path, "/err"):
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"invalid api key ` + strings.Repeat("x", 500) + `"}}`))
		case strings.HasSuffix(r.URL.Path, "/html"):
			_, _ = w.Write([]byte("<html>proxy</html>"))
		case strings.HasSuffix(r.URL.Path, "/empty"):
			_, _ = w.Write([]byte(`{"choices":[]}`))
		case strings.HasSuffix(r.URL.Path, "/slow"):
			<-r.Context().Done()
		default:
			_, _ = w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"hi"}}]}`))
		}
	}))
	defer srv.Close()
	mc := &ModelClient{Providers: testProviders, Getenv: func(string) string { return "k" }}
	ctx := context.Background()
	out, err := mc.Complete(ctx, &Model{URL: srv.URL + "/v1", Name: "m"}, []Message{{Role: "user", Content: "x"}})
	if err != nil || out != "hi" || gotPath != "/v1/chat/completions" {
		t.Fatalf("%q %v %s", out, err, gotPath)
	}
	_, err = mc.Complete(ctx, &Model{URL: srv.URL + "/err", Name: "m", APIKeyEnv: "K"}, nil)
	wantErrContains(t, err, "HTTP 401 Unauthorized", "invalid api key xxx", "…")
	if len(err.Error()) > 600 {
		t.Fatalf("the body snippet is bounded: %d bytes", len(err.Error()))
	}
	_, err = mc.Complete(ctx, &Model{URL: srv.URL + "/html", Name: "m"}, nil)
	wantErrContains(t, err, "error parsing response json", "<html>proxy</html>")
	_, err = mc.Complete(ctx, &Model{URL: srv.URL + "/empty", Name: "m"}, nil)
	wantErrContains(t, err, "the reply has no choices")
	cctx, cancel := context.WithTimeoutCause(ctx, 100*time.Millisecond, errors.New("timed out after 0.1s"))
	defer cancel()
	_, err = mc.Complete(cctx, &Model{URL: srv.URL + "/slow", Name: "m"}, nil)
	wantErrContains(t, err, "timed out after 0.1s")
	_, err = mc.Complete(ctx, &Model{URL: "http://127.0.0.1:1/v1", Name: "m"}, nil)
	wantErrContains(t, err, "model m at http://127.0.0.1:1/v1/chat/completions")
}
