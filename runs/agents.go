package runs

import (
	"context"
	"fmt"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/chain"
)

// agentHooks returns the engine's agent runner and chain resolver: with
// agents loaded, agent nodes run on the agent runtime and the compiled
// chains (__chain__<agent>) resolve by name alongside the saved ones.
func (s *Service) agentHooks(opts Options) (engine.AgentRunner, engine.ChainResolver) {
	chains := engine.ChainResolver(opts.Store.ResolveChain)
	if opts.Agents == nil {
		return opts.Agent, chains
	}
	agents := opts.Agents
	chains = func(ctx context.Context, name string) (*chain.Chain, error) {
		if agent.IsReservedName(name) {
			if c, ok := agents.ResolveChain(name); ok {
				return c, nil
			}
			return nil, fmt.Errorf("no agent declares the chain %q", name)
		}
		return opts.Store.ResolveChain(ctx, name)
	}
	if opts.Agent != nil {
		return opts.Agent, chains
	}
	rt := &agent.Runtime{Set: agents, Registry: opts.Registry, ChainTool: chains, Model: agent.ModelClient{HTTP: opts.ModelHTTP, Prices: opts.Prices}}
	if opts.Conversations != nil {
		rt.Conversations = conversations{opts.Conversations}
	}
	rt.RunChain = func(ctx context.Context, name string, input map[string]any) (any, error) {
		c, err := chains(ctx, name)
		if err != nil {
			return nil, err
		}
		p, _ := s.engineCompile(ctx, c) // a plan with errors runs as refused
		res, err := s.eng.Run(ctx, p, input, engine.RunOptions{})
		if err != nil {
			return nil, err
		}
		switch res.Status {
		case chain.StatusCompleted, chain.StatusPartial:
			return res.FinalOutput, nil
		}
		msg := string(res.Status)
		if res.Error != nil {
			msg += ": " + res.Error.Message
		}
		return nil, fmt.Errorf("run %s %s", res.RunID, msg)
	}
	return rt.RunNode, chains
}
