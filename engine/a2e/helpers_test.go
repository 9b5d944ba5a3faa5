package a2e_test

import (
	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
)

// newEngine is an engine with the builtin tools, which the wire code cases
// run.
func newEngine() *engine.Engine {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	return engine.New(engine.Options{Registry: reg})
}
