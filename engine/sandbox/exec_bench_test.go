package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/dop251/goja"
)

// BenchmarkExecute is a trivial call inside a child, without the pipes: a
// fresh runtime, the cached program, the data read in, the result out.
func BenchmarkExecute(b *testing.B) {
	cache := &programs{}
	req := &Request{Code: `return {v: item * 2}`, Scope: json.RawMessage(`{"item":3,"index":3}`)}
	for i := 0; i < b.N; i++ {
		if r := execute(cache, nil, req, func(*goja.Runtime) {}); r.Kind != "" {
			b.Fatal(r.Error)
		}
	}
}

// BenchmarkExecuteSession is the same call as one of a run's: the
// session's runtime is reused.
func BenchmarkExecuteSession(b *testing.B) {
	cache, vms := &programs{}, &vmCache{}
	req := &Request{Code: `return {v: item * 2}`, Scope: json.RawMessage(`{"item":3,"index":3}`), Session: "run#1"}
	for i := 0; i < b.N; i++ {
		if r := execute(cache, vms, req, func(*goja.Runtime) {}); r.Kind != "" {
			b.Fatal(r.Error)
		}
	}
}
