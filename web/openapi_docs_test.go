package web

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// docs/api.md and web/openapi.json agree on statuses: every status a route's
// row in the docs names is listed for that operation in the document, and
// every status the document lists is in the row or among those the docs'
// conventions give every route (401, 403, 421, 429, 500; for writes 413,
// 415, 507).
func TestAPIDocsAndOpenAPIAgreeOnStatuses(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPISpec, &spec); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(GET|POST|PUT|DELETE) (/[^` ?]*)[^|]*\\|.*\\|([^|]*)\\|\\s*$")
	status := regexp.MustCompile(`\b([1-5][0-9][0-9])\b`)
	rows := 0
	for _, line := range strings.Split(string(md), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		method, path := strings.ToLower(m[1]), m[2]
		op, ok := spec.Paths[path][method]
		if !ok {
			t.Errorf("docs/api.md has %s %s; openapi.json does not", m[1], path)
			continue
		}
		docs := map[string]bool{}
		for _, s := range status.FindAllStringSubmatch(m[3], -1) {
			docs[s[1]] = true
			if _, ok := op.Responses[s[1]]; !ok {
				t.Errorf("%s %s: docs/api.md gives %s, openapi.json does not", m[1], path, s[1])
			}
		}
		// 403: every route checks the caller's role (role_required).
		common := []string{"401", "403", "421", "429", "500"}
		if method != "get" {
			common = append(common, "413", "415", "507")
		}
		var extra []string
		for s := range op.Responses {
			if !docs[s] && !slices.Contains(common, s) {
				extra = append(extra, s)
			}
		}
		sort.Strings(extra)
		if len(extra) > 0 {
			t.Errorf("%s %s: openapi.json lists %v, docs/api.md does not", m[1], path, extra)
		}
	}
	if rows < 20 {
		t.Fatalf("only %d route rows read from docs/api.md", rows)
	}
}

// TestOpenAPILintsAsServed: the served document passes the usual lint rules
// with no ignore file beside it, and a generator can type every enum
// (oapi-codegen makes an untyped enum an interface{}).
func TestOpenAPILintsAsServed(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPISpec, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["enum"]; ok {
				if _, typed := x["type"]; !typed {
					t.Errorf("%s: an enum without a type", path)
				}
			}
			for k, e := range x {
				walk(e, path+"/"+k)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s/%d", path, i))
			}
		}
	}
	walk(doc, "#")
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			responses, ok := op.(map[string]any)["responses"].(map[string]any)
			if !ok {
				continue
			}
			if !slices.ContainsFunc(slices.Collect(maps.Keys(responses)), func(code string) bool { return strings.HasPrefix(code, "2") }) {
				t.Errorf("%s %s: no 2xx answer (redocly's operation-2xx-response)", strings.ToUpper(method), path)
			}
		}
	}
	if _, err := os.Stat("../.redocly.lint-ignore.yaml"); err == nil {
		t.Error(".redocly.lint-ignore.yaml: the document must lint clean as served, with no ignore file")
	}
}
