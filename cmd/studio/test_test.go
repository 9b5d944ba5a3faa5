package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// failingChain is a chain whose second test fails: its http node is mocked
// with a score the assertion does not expect.
const failingChain = `{"name":"scored","nodes":[
 {"node_id":"fetch","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:1/"}},
 {"node_id":"score","kind":"tool","name":"transform","input":{"expression":"{value: body.score}"},"input_map":{"data":"fetch.output"}}],
 "edges":[{"source":"fetch","target":"score"}],
 "tests":[
  {"name":"seven","mocks":{"fetch":{"status":200,"headers":{},"body":{"score":7}}},"assert":{"status":"completed","expect":[{"path":"score.output.value","equals":7}]}},
  {"name":"wrong","mocks":{"fetch":{"status":200,"headers":{},"body":{"score":3}}},"assert":{"expect":[{"path":"score.output.value","equals":7}]}}]}`

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTestCommandExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	failing := writeFile(t, dir, "scored.json", failingChain)
	if code, out, errs := studio(t, "test", "../../examples/branch.json"); code != exitOK || !strings.Contains(out, "2 passed, 0 failed") {
		t.Errorf("passing file: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ := studio(t, "test", failing)
	if code != exitFailed {
		t.Errorf("failing file: exit %d, want 1", code)
	}
	for _, want := range []string{"ok   " + failing + ": seven", "FAIL " + failing + ": wrong",
		`tests[1] "wrong".assert.expect[0] (node score): ` + "`score.output.value` is 3, want 7", "1 passed, 1 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A directory: every *.json file, one failing is enough to fail.
	writeFile(t, dir, "ok.json", `{"name":"ok","nodes":[{"node_id":"a","kind":"tool","name":"echo"}],"tests":[{"name":"runs","assert":{"ran":["a"]}}]}`)
	if code, out, _ := studio(t, "test", dir); code != exitFailed || !strings.Contains(out, "2 passed, 1 failed") {
		t.Errorf("dir: exit %d\n%s", code, out)
	}
	bad := writeFile(t, t.TempDir(), "bad.json", `{"name":"x","nodes":[],"tests":[{"name":"a","asert":{}}]}`)
	if code, out, _ := studio(t, "test", bad); code != exitFailed || !strings.Contains(out, `tests[0] "a".asert: unknown field`) {
		t.Errorf("undecodable: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"test"}, {"test", "a", "b"}, {"test", filepath.Join(dir, "missing.json")}, {"test", "--junit"}, {"test", "--nope", failing}} {
		if code, _, _ := studio(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestTestCommandJSONAndJUnit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	failing := writeFile(t, dir, "scored.json", failingChain)
	junit := filepath.Join(dir, "out", "..", "junit.xml")
	code, out, errs := studio(t, "test", failing, "--json", "--junit", junit)
	if code != exitFailed {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Total, Passed, Failed int
		Files                 []struct {
			File  string
			Tests []struct {
				Name     string
				Passed   bool
				Failures []struct {
					Kind, Field, Node string
					Expected, Actual  any
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output is not one JSON object: %v\n%s", err, out)
	}
	if res.Total != 2 || res.Passed != 1 || res.Failed != 1 || len(res.Files) != 1 {
		t.Fatalf("totals %+v", res)
	}
	f := res.Files[0].Tests[1].Failures[0]
	if f.Kind != "expect" || f.Node != "score" || f.Expected != 7.0 || f.Actual != 3.0 {
		t.Errorf("failure %+v", f)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var x struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &x); err != nil {
		t.Fatalf("junit is not XML: %v\n%s", err, data)
	}
	if x.Tests != 2 || x.Failures != 1 || len(x.Suites) != 1 || x.Suites[0].Name != failing {
		t.Fatalf("junit %+v", x)
	}
	cs := x.Suites[0].Cases
	if cs[0].Name != "seven" || cs[0].Failure != nil || cs[1].Failure == nil || !strings.Contains(cs[1].Failure.Text, "node score: ") {
		t.Errorf("cases %+v", cs)
	}
}

// TestValidateReportsTestIssues: `studio validate` names the test and field
// of a broken test, mocks of built-in tools checked against their output.
func TestValidateReportsTestIssues(t *testing.T) {
	t.Parallel()
	f := writeFile(t, t.TempDir(), "bad.json", `{"name":"x","nodes":[{"node_id":"f","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:1/"}}],
	 "tests":[{"name":"t","mocks":{"f":{"status":"ok","headers":{},"body":null},"g":1},"assert":{}}]}`)
	code, out, _ := studio(t, "validate", f)
	if code != exitFailed {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{`tests[0] "t".mocks.f: does not fit the output of tool "http": "status" is a string, want an integer [test_mock_shape]`,
		`tests[0] "t".mocks.g: no node "g" [test_unknown_node]`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
