package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/dop251/goja"
)

// BenchmarkExecute is a trivial call inside a child, without the pipes: a
// fresh runtime, the cached program, the data parsed in, the result out.
func BenchmarkExecute(b *testing.B) {
	cache := &programs{}
	req := &Request{Code: `return {v: item * 2}`, Scope: json.RawMessage(`{"item":3,"index":3}`)}
	for i := 0; i < b.N; i++ {
		if r := execute(cache, req, func(*goja.Runtime) {}); r.Kind != "" {
			b.Fatal(r.Error)
		}
	}
}
