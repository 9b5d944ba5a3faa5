package main

import (
	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
)

// builtinRegistry is a registry of the built-in tools with what the host
// declares about them: which run inline, their input schemas and
// descriptions (forms, GET /v1/tools, the input_schema rule, and what an
// agent's model is offered) and their output schemas (chain tests check
// their mocks against these). Servers and workers must agree on it: a
// worker runs the agents whose tools the server describes.
func builtinRegistry(opts builtin.Options) *engine.Registry {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(opts))
	reg.SetInline(builtin.Inline...)
	reg.SetScoped(builtin.Scoped...)
	for n, c := range builtin.Checks() {
		reg.SetCheck(n, c)
	}
	for _, t := range builtin.Catalog() {
		reg.SetInputSchema(t.Name, t.InputSchema)
		reg.SetDescription(t.Name, t.Description)
	}
	for n, sc := range builtin.OutputSchemas() {
		reg.SetOutputSchema(n, sc)
	}
	return reg
}
