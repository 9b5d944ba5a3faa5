package sandbox

import (
	"testing"

	"github.com/dop251/goja"
)

func BenchmarkTmpNew(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = goja.New()
	}
}

func BenchmarkTmpReuse(b *testing.B) {
	cache := &programs{}
	prg, _ := cache.get(`return {v: item * 2}`)
	vm := goja.New()
	fnv, _ := vm.RunProgram(prg)
	fn, _ := goja.AssertFunction(fnv)
	parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
	for i := 0; i < b.N; i++ {
		sv, _ := parse(goja.Undefined(), vm.ToValue(`{"item":3,"index":3}`))
		s := sv.ToObject(vm)
		args := []goja.Value{}
		for _, n := range Names {
			args = append(args, s.Get(n))
		}
		r, _ := fn(goja.Undefined(), args...)
		out, _ := stringify(goja.Undefined(), r)
		_ = out.String()
	}
}
