package web

import (
	"bytes"
	"strings"
	"testing"
)

// An exported file is for people and git: <, > and & stay literal, 2-space
// indent, and exporting twice gives the same bytes (chain fields in the
// model's order, map keys sorted).
func TestExportReadableAndStable(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"a <b> & c","description":"x > 1 && y < 2",
		"sample_input":{"zeta":1,"alpha":"<&>","mid":{"z":1,"a":2}},
		"nodes":[
		  {"node_id":"a","kind":"tool","name":"echo","input_map":{"zz":"input.x > 1","aa":"input.y < 2 && input.z"},"label":"Step <1>"},
		  {"node_id":"b","kind":"branch","condition":"length(a.output) > `+"`0`"+`"},
		  {"node_id":"c","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"c","label":"true"}]}`)
	for _, format := range []string{"studio", "a2e"} {
		first := do(t, ts, "GET", "/v1/chains/"+id+"/export?format="+format, nil)
		wantStatus(t, first, 200)
		body := string(first.body)
		for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if strings.Contains(body, esc) {
				t.Errorf("%s export escapes %s:\n%s", format, esc, body)
			}
		}
		for _, lit := range []string{`"input.x > 1"`, `"input.y < 2 && input.z"`, `"Step <1>"`} {
			if !strings.Contains(body, lit) {
				t.Errorf("%s export lacks %s literally:\n%s", format, lit, body)
			}
		}
		if !strings.HasSuffix(body, "}\n") || !strings.HasPrefix(body, "{\n  \"") {
			t.Errorf("%s export is not 2-space indented with a final newline:\n%s", format, body)
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "\t") || (len(line)-len(strings.TrimLeft(line, " ")))%2 != 0 {
				t.Fatalf("%s export: line %q is not indented by 2 spaces a level", format, line)
			}
		}
		second := do(t, ts, "GET", "/v1/chains/"+id+"/export?format="+format, nil)
		if !bytes.Equal(first.body, second.body) {
			t.Errorf("%s export differs between two exports:\n%s\n---\n%s", format, first.body, second.body)
		}
		if format == "studio" {
			// Model order for the chain's fields, sorted keys in maps.
			order := []string{`"name"`, `"description"`, `"sample_input"`, `"alpha"`, `"mid"`, `"a": 2`, `"z": 1`, `"zeta"`, `"nodes"`, `"aa"`, `"zz"`, `"label"`, `"edges"`}
			last := -1
			for _, k := range order {
				i := strings.Index(body, k)
				if i <= last {
					t.Fatalf("studio export: %s is out of order:\n%s", k, body)
				}
				last = i
			}
		}
	}
}
