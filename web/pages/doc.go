// Package pages is the designer's browser face: the pages and htmx
// fragments rendered on the server from views/, and the form posts behind
// them. A form does what its API route does by calling the same ops
// function; pages render, they do not write records of their own.
package pages

import "github.com/chainstudio/studio/web/ops"

// Pages are the page handlers, by what they show.
type Pages struct {
	Chains   *Chains   // the chain list, the editor, versions
	Runs     *Runs     // runs, their comparison, usage, the inbox
	Settings *Settings // agents, credentials, MCP servers, users
}

// New returns the page handlers over env.
func New(env *ops.Env) *Pages {
	p := page{Env: env}
	return &Pages{Chains: &Chains{p}, Runs: &Runs{p}, Settings: &Settings{p}}
}

// page is what every page handler has: the environment and the form
// error helpers (pages.go).
type page struct {
	*ops.Env
}

// Chains serves the chain list, the editor and the versions page.
type Chains struct{ page }

// Runs serves the run pages, their comparison, usage and the inbox.
type Runs struct{ page }

// Settings serves the agents, credentials, MCP servers and users pages.
type Settings struct{ page }
