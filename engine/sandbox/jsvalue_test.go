package sandbox

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
)

// The scope reader builds what JSON.parse builds: the same values, keys in
// the same order, __proto__ an own key; and it refuses what JSON.parse
// refuses.
func TestScopeArgsMatchJSONParse(t *testing.T) {
	t.Parallel()
	vm := goja.New()
	stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
	parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	for _, v := range []string{
		`1`, `-0.5e3`, `123456789.125`, `"plain"`, `"esc\"aped \\ \u00e9 \ud83d\ude00 \n"`, `"héllo"`, `true`, `false`, `null`,
		`[]`, `{}`, `[1,[2,[3,{"a":[]}]]]`, `{"z":1,"a":2,"m":{"y":[true,null],"b":"x"}}`,
		`{"__proto__":{"polluted":1},"k":2}`, ` { "sp" : [ 1 , 2 ] } `, `{"dup":1,"dup":2}`,
	} {
		args, err := scopeArgs(vm, []byte(`{"item":`+v+`}`), []string{"item"})
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		want, err := parse(goja.Undefined(), vm.ToValue(v))
		if err != nil {
			t.Fatalf("%s: JSON.parse: %v", v, err)
		}
		got, _ := stringify(goja.Undefined(), args[0])
		exp, _ := stringify(goja.Undefined(), want)
		if got.String() != exp.String() {
			t.Errorf("%s: got %s, JSON.parse gives %s", v, got, exp)
		}
	}
	// __proto__ is an own key: the object's prototype is untouched.
	args, _ := scopeArgs(vm, []byte(`{"item":{"__proto__":{"polluted":1}}}`), []string{"item"})
	if p := args[0].ToObject(vm).Prototype(); p == nil || p.Get("polluted") != nil {
		t.Errorf("__proto__ set the prototype")
	}
	for _, bad := range []string{``, `[]`, `{"item":}`, `{"item":01}`, `{"item":"\x01"}`, `{"item":[1,]}`, `{"item":tru}`, `{"item":1} x`, `{"item":"open}`, `{"item":1,}`,
		`{"item":` + strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1) + `}`} {
		if _, err := scopeArgs(vm, []byte(bad), []string{"item"}); err == nil {
			t.Errorf("%.40q: accepted", bad)
		}
	}
	// nodes falls back to node_results; a missing name is undefined.
	args, err := scopeArgs(vm, []byte(`{"node_results":{"a":1}}`), []string{"nodes", "item"})
	if err != nil || args[0].ToObject(vm).Get("a").ToInteger() != 1 || !goja.IsUndefined(args[1]) {
		t.Errorf("nodes and a missing name: %v %v", args, err)
	}
}

// Frames survive the trip: a request's parts, a plain value, a response
// with logs or an error.
func TestFramesRoundTrip(t *testing.T) {
	t.Parallel()
	req := &Request{Code: "return 1 // é", Session: "run#1", Scope: []byte(`{"item":[1,2]}`)}
	b, err := encodeRequest(req, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	setAllowance(b, 1500*time.Millisecond)
	got, allow, err := decodeRequest(b[4:])
	if err != nil || got.Code != req.Code || got.Session != req.Session || string(got.Scope) != string(req.Scope) || allow != 1500*time.Millisecond {
		t.Fatalf("request: %+v, %s, %v", got, allow, err)
	}
	if _, _, err := decodeRequest(b[4:10]); err == nil {
		t.Errorf("a cut request was read")
	}
	if _, err := encodeRequest(req, 10); err == nil {
		t.Errorf("a request over its bound was written")
	}
	for _, resp := range []*Response{{Value: []byte(`{"v":1}`), CPU: 40 * time.Microsecond}, {Value: []byte(`2`), Logs: []string{"a"}}, {Kind: KindRuntime, Error: "boom", Line: 2, Column: 3, CPU: 2 * time.Second}} {
		out, err := appendResponse(nil, resp, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeResponse(out[4:])
		if err != nil || string(back.Value) != string(resp.Value) || back.Kind != resp.Kind || back.Error != resp.Error || len(back.Logs) != len(resp.Logs) || back.Line != resp.Line || back.CPU != resp.CPU {
			t.Errorf("%+v came back as %+v (%v)", resp, back, err)
		}
	}
	if _, err := decodeResponse([]byte("X1")); err == nil {
		t.Errorf("a frame of unknown type was read")
	}
}

// Calls of one session share a runtime; another session never sees what
// the first left behind, and a call without a session starts fresh.
func TestSessionsShareARuntimeOnlyWithinARun(t *testing.T) {
	t.Parallel()
	cache, vms := &programs{}, &vmCache{}
	code := `globalThis.seen = (globalThis.seen || 0) + 1; return seen`
	call := func(session string) string {
		r := execute(cache, vms, &Request{Code: code, Scope: []byte(`{}`), Session: session}, func(*goja.Runtime) {})
		if r.Kind != "" {
			t.Fatal(r.Error)
		}
		return string(r.Value)
	}
	if a, b := call("run-a"), call("run-a"); a != "1" || b != "2" {
		t.Errorf("one run's calls: %s then %s, want 1 then 2 (one runtime)", a, b)
	}
	if c := call("run-b"); c != "1" {
		t.Errorf("another run saw %s, want 1 (its own runtime)", c)
	}
	if d, e := call(""), call(""); d != "1" || e != "1" {
		t.Errorf("calls without a session: %s, %s; want fresh runtimes", d, e)
	}
	// The cache is bounded: older sessions make room.
	for i := 0; i < 3*vmCacheLimit; i++ {
		call(strings.Repeat("s", i+1))
	}
	if len(vms.m) > vmCacheLimit || len(vms.order) != len(vms.m) {
		t.Errorf("%d runtimes kept (%d in order), limit %d", len(vms.m), len(vms.order), vmCacheLimit)
	}
}

// Decode gives what json.Unmarshal into an any gives, and refuses what it
// refuses.
func TestResponseDecodeMatchesUnmarshal(t *testing.T) {
	t.Parallel()
	for _, v := range []string{`1`, `-2.5e-3`, `"a\"b\u00e9\ud83d\ude00"`, `"héllo"`, `true`, `false`, `null`, `[]`, `{}`,
		`{"v":[1,{"w":null}],"x":"y"}`, ` [ 1 , "2" ] `, `{"dup":1,"dup":2}`} {
		got, err := (&Response{Value: []byte(v)}).Decode()
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		var want any
		if err := json.Unmarshal([]byte(v), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %#v, json.Unmarshal gives %#v", v, got, want)
		}
	}
	for _, bad := range []string{``, `{`, `[1,]`, `{"a"}`, `01`, `"\x01"`, `nul`, `1 2`, strings.Repeat("[", maxJSONDepth+1)} {
		if _, err := (&Response{Value: []byte(bad)}).Decode(); err == nil {
			t.Errorf("%.30q: accepted", bad)
		}
	}
}
