package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/mcp"
	"github.com/chainstudio/studio/internal/mcphost"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/vault"
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
	reg.SetContained(builtin.Contained...)
	for n, c := range builtin.Checks(opts) {
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

// mcpFlags are serve's and worker's MCP flags: both must build the same
// registry, so they take the same ones.
type mcpFlags struct {
	allow   listFlag
	private *bool
}

func (f *mcpFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.allow, "allow-mcp-command", "let stdio MCP servers run the program `NAME` (repeatable; a bare name in PATH or an absolute path; default: none)")
	f.private = fs.Bool("mcp-allow-private", false, "let the studio connect to MCP servers at loopback and private addresses (a server on this machine); the http tool stays guarded")
}

// startMCP connects to the MCP servers the store registers and makes their
// tools the registry's mcp: source. The credentials a server names are
// resolved as for a chain that is not saved: only those open to every
// chain, since every chain may call its tools.
func startMCP(ctx context.Context, db store.MCPServerStore, vlt *vault.Vault, reg *engine.Registry, f mcpFlags, log *slog.Logger) (*mcphost.Host, error) {
	opts := mcphost.Options{Store: db, AllowPrivate: *f.private, AllowCommand: f.allow, RefuseEnv: builtin.LoaderEnv, Logger: log}
	if vlt != nil {
		opts.Credentials = vlt.ForChain("")
	}
	host, err := mcphost.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	reg.AddSource(mcp.IDPrefix, host)
	return host, nil
}

// agentToolKnown is what agents' tools: entries are checked against when
// they load: a registered tool, or any MCP tool id (its server may be
// registered, or come back, after the agents load; a call to a tool no
// server lists fails at that call).
func agentToolKnown(reg *engine.Registry) func(string) bool {
	return func(name string) bool {
		if _, _, ok := mcp.ParseToolID(name); ok {
			return true
		}
		_, ok := reg.Get(name)
		return ok
	}
}
