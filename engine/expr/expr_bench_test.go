package expr

import (
	"strconv"
	"testing"
)

// benchScope is a context like the engine's: many node results, of which an
// expression reads one.
func benchScope() MapScope {
	s := testScope()
	nodes := map[string]any{}
	for i := 0; i < 10000; i++ {
		nodes["node"+strconv.Itoa(i)] = map[string]any{"score": float64(i)}
	}
	s["node_results"] = nodes
	return s
}

// lazyScope is a Scope that is not a MapScope, as an engine context would be.
type lazyScope struct{ m map[string]any }

func (l lazyScope) Lookup(name string) (any, bool) { v, ok := l.m[name]; return v, ok }

func BenchmarkEval(b *testing.B) {
	cases := []struct{ name, src string }{
		{"JMESPath", "output.score > `5`"},
		{"JMESPathFunction", "length(output.items) > `0`"},
		{"Comparison", "{{state.x}} == billing"},
		{"ComparisonNumber", "{{node_results.node42.score}} >= 0.8"},
		{"Guard", "{{ output.data.score > 7 }}"},
		{"GuardValue", "{{ output.answer }}"},
	}
	ms := benchScope()
	scopes := []struct {
		name string
		s    Scope
	}{{"MapScope", ms}, {"LazyScope", lazyScope{ms}}}
	for _, c := range cases {
		e, err := Parse(c.src)
		if err != nil {
			b.Fatal(err)
		}
		for _, sc := range scopes {
			b.Run(c.name+"/"+sc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Eval(sc.s, true); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkParse(b *testing.B) {
	for _, src := range []string{"length(output.items) > `0`", "{{state.x}} == billing", "{{ output.data.score > 7 }}"} {
		b.Run(src, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
