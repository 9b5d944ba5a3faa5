package builtin

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/tool"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// wantErr checks that err is non-nil and contains every fragment.
func wantErr(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got nil", fragments)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q does not contain %q", err, f)
		}
	}
}

func wantDenied(t *testing.T, err error, fragments ...string) {
	t.Helper()
	wantErr(t, err, fragments...)
	if !errors.Is(err, tool.ErrDenied) {
		t.Fatalf("error %q does not wrap tool.ErrDenied", err)
	}
}

func TestCatalogMatchesTools(t *testing.T) {
	t.Parallel()
	cat := Catalog()
	tools := Tools(Options{})
	if len(cat) != len(tools) {
		t.Fatalf("Catalog has %d entries, Tools has %d", len(cat), len(tools))
	}
	names := make([]string, len(cat))
	for i, info := range cat {
		names[i] = info.Name
		if _, ok := tools[info.Name]; !ok {
			t.Errorf("Catalog lists %q, which Tools does not provide", info.Name)
		}
		if info.Description == "" || strings.Contains(info.Description, "\n") {
			t.Errorf("%s: description must be one non-empty line, got %q", info.Name, info.Description)
		}
		if info.InputSchema["type"] != "object" {
			t.Errorf("%s: InputSchema type = %v", info.Name, info.InputSchema["type"])
		}
		props, _ := info.InputSchema["properties"].(map[string]any)
		if req, ok := info.InputSchema["required"].([]any); ok {
			for _, r := range req {
				if _, ok := props[r.(string)]; !ok {
					t.Errorf("%s: required field %v is not among properties", info.Name, r)
				}
			}
		}
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("Catalog is not sorted: %v", names)
	}
}

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	o := Options{ProcAllow: []string{"echo"}}.withDefaults()
	if o.HTTPTimeout != 30*time.Second || o.MaxResponseBytes != 10<<20 || o.MaxFileBytes != 10<<20 {
		t.Fatalf("defaults not applied: %+v", o)
	}
	orig := []string{"echo"}
	o = Options{ProcAllow: orig}.withDefaults()
	o.ProcAllow[0] = "sh"
	if orig[0] != "echo" {
		t.Fatal("withDefaults must copy ProcAllow")
	}
}

func TestEcho(t *testing.T) {
	t.Parallel()
	in := map[string]any{"a": 1.0, "b": []any{"x"}}
	out, err := Tools(Options{})["echo"](context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := out.(map[string]any)
	if !ok || reflect.ValueOf(m).UnsafePointer() != reflect.ValueOf(in).UnsafePointer() {
		t.Fatalf("echo must return the same map, got %#v", out)
	}
}

func TestDelay(t *testing.T) {
	delay := Tools(Options{})["delay"]
	t.Run("sleeps and returns input", func(t *testing.T) {
		in := map[string]any{"ms": 30.0, "x": "y"}
		start := time.Now()
		out, err := delay(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < 30*time.Millisecond {
			t.Fatalf("returned after %v, want >= 30ms", el)
		}
		if !reflect.DeepEqual(out, in) {
			t.Fatalf("out = %#v", out)
		}
	})
	t.Run("returns data when given", func(t *testing.T) {
		greeting := map[string]any{"text": "hello"}
		out, err := delay(context.Background(), map[string]any{"ms": 0.0, "data": greeting}, nil)
		if err != nil || !reflect.DeepEqual(out, greeting) {
			t.Fatalf("out = %#v, %v; want the data passed through", out, err)
		}
	})
	t.Run("zero", func(t *testing.T) {
		if _, err := delay(context.Background(), map[string]any{"ms": 0.0}, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := delay(ctx, map[string]any{"ms": 60000.0}, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		if el := time.Since(start); el > time.Second {
			t.Fatalf("cancel took %v", el)
		}
	})
	for _, tc := range []struct {
		name string
		in   map[string]any
		want string
	}{
		{"missing", map[string]any{}, `delay: field "ms" is required`},
		{"string", map[string]any{"ms": "10"}, `delay: field "ms" must be a number, got string`},
		{"negative", map[string]any{"ms": -1.0}, `delay: field "ms" must be >= 0, got -1`},
		{"too long", map[string]any{"ms": 3600001.0}, `delay: field "ms" must be at most 3.6e+06 (1 hour), got 3.600001e+06`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := delay(context.Background(), tc.in, nil)
			wantErr(t, err, tc.want)
		})
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	fail := Tools(Options{})["fail"]
	for _, tc := range []struct {
		name    string
		in      map[string]any
		attempt int
		want    string // error; "" means success
	}{
		{"default message", map[string]any{}, 1, "fail tool failed"},
		{"custom message", map[string]any{"message": "boom"}, 1, "boom"},
		{"before until_attempt", map[string]any{"message": "boom", "until_attempt": 3.0}, 2, "boom"},
		{"at until_attempt", map[string]any{"until_attempt": 3.0}, 3, ""},
		{"after until_attempt", map[string]any{"until_attempt": 3.0}, 5, ""},
		{"until_attempt 1", map[string]any{"until_attempt": 1.0}, 1, ""},
		{"bad message", map[string]any{"message": 5.0}, 1, `fail: field "message" must be a string, got number`},
		{"bad until_attempt", map[string]any{"until_attempt": "3"}, 1, `fail: field "until_attempt" must be a number, got string`},
		{"fractional until_attempt", map[string]any{"until_attempt": 1.5}, 1, `fail: field "until_attempt" must be a whole number >= 1, got 1.5`},
		{"zero until_attempt", map[string]any{"until_attempt": 0.0}, 1, `must be a whole number >= 1, got 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tool.WithAttempt(context.Background(), tc.attempt)
			out, err := fail(ctx, tc.in, nil)
			if tc.want != "" {
				wantErr(t, err, tc.want)
				if tc.want == "boom" || tc.want == "fail tool failed" {
					if err.Error() != tc.want {
						t.Fatalf("error = %q, want exactly %q", err, tc.want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"attempt": float64(tc.attempt), "ok": true}
			if !reflect.DeepEqual(out, want) {
				t.Fatalf("out = %#v, want %#v", out, want)
			}
		})
	}
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	interrupt := Tools(Options{})["interrupt"]
	t.Run("prompt", func(t *testing.T) {
		_, err := interrupt(context.Background(), map[string]any{"prompt": "approve?", "x": 1.0}, nil)
		ie, ok := tool.IsInterrupt(err)
		if !ok || ie.Prompt != "approve?" {
			t.Fatalf("err = %v, want interrupt with prompt", err)
		}
	})
	t.Run("whole input as prompt", func(t *testing.T) {
		in := map[string]any{"x": 1.0}
		_, err := interrupt(context.Background(), in, nil)
		ie, ok := tool.IsInterrupt(err)
		if !ok || !reflect.DeepEqual(ie.Prompt, in) {
			t.Fatalf("err = %v, want interrupt with the input as prompt", err)
		}
	})
	t.Run("resumed", func(t *testing.T) {
		ctx := tool.WithResume(context.Background(), map[string]any{"approved": true})
		out, err := interrupt(ctx, map[string]any{"prompt": "approve?"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, map[string]any{"approved": true}) {
			t.Fatalf("out = %#v", out)
		}
	})
	t.Run("resumed with nil", func(t *testing.T) {
		out, err := interrupt(tool.WithResume(context.Background(), nil), map[string]any{}, nil)
		if err != nil || out != nil {
			t.Fatalf("out, err = %#v, %v; want nil, nil", out, err)
		}
	})
}

// TestCatalogSchemasAreJSONSchema: every input schema compiles as JSON
// Schema 2020-12, and what it declares agrees with what the tool does.
func TestCatalogSchemasAreJSONSchema(t *testing.T) {
	t.Parallel()
	for _, info := range Catalog() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if err := c.AddResource(info.Name+".json", info.InputSchema); err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		if _, err := c.Compile(info.Name + ".json"); err != nil {
			t.Errorf("%s: not a JSON Schema: %v", info.Name, err)
		}
		props := info.InputSchema["properties"].(map[string]any)
		order, _ := info.InputSchema["x-order"].([]any)
		if len(order) != len(props) {
			t.Errorf("%s: x-order %v does not list every property", info.Name, order)
		}
		for k, p := range props {
			if d, _ := p.(map[string]any)["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", info.Name, k)
			}
		}
	}
	// the bounds the schema states are the tool's own
	delay := InputSchemas()["delay"]["properties"].(map[string]any)["ms"].(map[string]any)
	tools := Tools(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tools["delay"](ctx, map[string]any{"ms": delay["maximum"].(float64) + 1}, nil); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("delay above the schema's maximum: %v", err)
	}
	if _, err := tools["delay"](ctx, map[string]any{"ms": delay["minimum"].(float64) - 1}, nil); err == nil || !strings.Contains(err.Error(), ">= 0") {
		t.Errorf("delay below the schema's minimum: %v", err)
	}
	// each call builds fresh maps: a caller's change never leaks
	InputSchemas()["delay"]["type"] = "changed"
	if InputSchemas()["delay"]["type"] != "object" {
		t.Error("Catalog shares its maps between calls")
	}
}
