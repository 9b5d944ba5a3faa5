package web

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	// The Go client that oapi-codegen generates from openapi.json imports
	// this runtime; importing it here keeps it (and its go.sum lines) in
	// go.mod, so TestGeneratedGoClient builds offline at the pinned version.
	_ "github.com/oapi-codegen/runtime"
)

// The document is written for code generators as well as for the checker:
// every non-integer number says it is a double (a generator's default for
// a bare `number` may be float32, which puts a Unix time in seconds tens
// of seconds off), and no request body is an inline oneOf/anyOf (a
// generator names an inline union after the operation, and for a Go client
// that named type loses the union's JSON encoding, so the body goes out as
// {}): a union body is a schema in components/schemas, referenced.
func TestOpenAPIDocumentSuitsGenerators(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := json.Unmarshal(openAPISpec, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(ptr string, x any)
	numbers := 0
	walk = func(ptr string, x any) {
		switch v := x.(type) {
		case map[string]any:
			if isNumberType(v["type"]) {
				numbers++
				if f, _ := v["format"].(string); f != "double" && f != "float" {
					t.Errorf("%s: type number without format double", ptr)
				}
			}
			for k, e := range v {
				walk(ptr+"/"+escapePointer(k), e)
			}
		case []any:
			for i, e := range v {
				walk(ptr+"/"+jsonIndex(i), e)
			}
		}
	}
	walk("#", doc)
	if numbers < 10 {
		t.Fatalf("only %d number schemas seen; the walk is broken", numbers)
	}

	paths, _ := doc["paths"].(map[string]any)
	bodies := 0
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			rb, _ := op.(map[string]any)["requestBody"].(map[string]any)
			content, _ := rb["content"].(map[string]any)
			for ct, media := range content {
				bodies++
				schema, _ := media.(map[string]any)["schema"].(map[string]any)
				for _, union := range []string{"oneOf", "anyOf"} {
					if _, ok := schema[union]; ok {
						t.Errorf("%s %s (%s): the request body is an inline %s; name it in components/schemas and $ref it",
							strings.ToUpper(method), path, ct, union)
					}
				}
			}
		}
	}
	if bodies < 10 {
		t.Fatalf("only %d request bodies seen; the walk is broken", bodies)
	}
}

func isNumberType(t any) bool {
	switch v := t.(type) {
	case string:
		return v == "number"
	case []any:
		for _, e := range v {
			if e == "number" {
				return true
			}
		}
	}
	return false
}

func jsonIndex(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// A Go client generated from openapi.json by the pinned oapi-codegen (a tool
// in go.mod) compiles and works against a real server: testdata/genclient
// creates, reads, updates with If-Match (both body shapes, and a stale tag),
// lists, validates, runs and exports a chain through it, decoding every
// answer into the generated types. The generated file reaches the build by
// an overlay, so the tree is left as it was.
func TestGeneratedGoClient(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and compiles a client (about half a minute)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	dir := t.TempDir()
	gen := filepath.Join(dir, "client.gen.go")
	cfg := filepath.Join(dir, "oapi-codegen.yaml")
	if err := os.WriteFile(cfg, []byte("package: main\noutput: "+gen+"\ngenerate:\n  client: true\n  models: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out.String())
		}
	}
	run("oapi-codegen", "tool", "oapi-codegen", "-config", cfg, "openapi.json")

	src, err := filepath.Abs(filepath.Join("testdata", "genclient", "client.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{src: gen}})
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "genclient")
	run("build the generated client", "build", "-overlay", overlayFile, "-o", bin, "./testdata/genclient")

	_, ts := newTestServer(t)
	out, err := exec.Command(bin, "-server", ts.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("the generated client against the server: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "genclient: ok") {
		t.Fatalf("the generated client did not finish: %s", out)
	}
}
