// Package agent is Chain Studio's agent-chaining runtime (docs/agents.md).
//
// An agent is defined in YAML (one `*.agent.yaml` file per agent, loaded from
// a folder at start-up). It either calls an OpenAI-compatible chat-completions
// endpoint (`model:`) or, offline and deterministically, a studio tool
// (`tool:`) or a saved chain (`chain:`). An agent may declare an
// `spec.output_schema` (validated by the small, exact validator in this
// package) and a `spec.chain`: which agents to fire when it finishes, and
// under which conditions.
//
// At load time every agent with a chain is compiled into an ordinary engine
// chain named `__chain__<agent>` (routing "all", dispatch sequential or
// parallel, strict conditions); cycles, max_depth, missing agents and the
// other start-up errors are reported then, never half-way through a run.
// The compiled chain runs on the studio engine like any other; agent nodes
// are executed by Runtime.RunNode (the engine's Options.Agent hook).
//
// See docs/agents.md for the YAML format and the response shape.
package agent
