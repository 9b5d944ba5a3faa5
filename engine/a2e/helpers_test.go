package a2e_test

import (
	"encoding/json"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
)

// js is v as JSON with <, > and & literal, for failure messages.
func js(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// newEngine is an engine with the builtin tools, which the wire code cases
// run.
func newEngine() *engine.Engine {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	return engine.New(engine.Options{Registry: reg})
}
