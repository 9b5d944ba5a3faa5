package ops

import (
	"context"
	"errors"
	"strings"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

// LoadStoredAgents makes the agents kept in db the set's stored agents:
// at start, after a change through this process, and at each poll (for a
// change made by another process or by `studio agents`). An agent whose
// source no longer reads is left out, with why (Set.Skipped).
func LoadStoredAgents(ctx context.Context, db store.AgentStore, set *agent.Set) error {
	if set == nil {
		return nil
	}
	recs, err := db.ListAgents(ctx)
	if err != nil {
		return err
	}
	defs := make([]*agent.Definition, 0, len(recs))
	unreadable := map[string]string{}
	for _, r := range recs {
		d, err := agent.ParseStored([]byte(r.Source), r.Name, r.Version)
		if err != nil {
			unreadable[r.Name] = err.Error()
			continue
		}
		defs = append(defs, d)
	}
	set.Replace(defs, unreadable)
	return nil
}

// AgentSave is a change to a stored agent: its source (YAML or JSON, as an
// agent file holds it), or a node that defines its agent (config), saved
// under Name.
type AgentSave struct {
	Name        string
	Description string
	Source      string
	Node        *chain.Node
	Message     string
	BaseVersion int // 0: create
}

// SaveAgent checks an agent as the runtime will (it must read, and compile
// beside every other agent) and stores it as a new version; the set runs
// it from then on.
func (s *Env) SaveAgent(ctx context.Context, who string, req AgentSave) (*store.Agent, error) {
	if s.Agents == nil {
		return nil, httpcore.Error(httpcore.EUNAVAILABLE, "agents_off", "this studio runs no agents", nil)
	}
	if req.Node != nil {
		src, probs := agent.DefinedSource(req.Node, req.Name, req.Description, s.Providers)
		if len(probs) > 0 {
			msgs := make([]string, len(probs))
			for i, p := range probs {
				msgs[i] = p.Message
			}
			return nil, httpcore.Error(httpcore.EINVALID, "invalid_agent", "the node's agent cannot be saved: "+strings.Join(msgs, "; "), probs)
		}
		req.Source = string(src)
	}
	if strings.TrimSpace(req.Source) == "" {
		return nil, httpcore.Error(httpcore.EINVALID, "invalid_agent", "definition: empty; an agent needs at least a name and a model, tool or chain", nil)
	}
	if req.Name == "" {
		// A new agent's name is the one its source gives.
		if d, err := agent.Parse([]byte(req.Source), ""); err == nil {
			req.Name = d.Name
		}
	}
	def, err := agent.ParseStored([]byte(req.Source), req.Name, req.BaseVersion+1)
	if err != nil {
		return nil, httpcore.Error(httpcore.EINVALID, "invalid_agent", err.Error(), nil)
	}
	if d, ok := s.Agents.Get(def.Name); ok && !d.Stored && d.File != "" && req.BaseVersion == 0 {
		// Storing it replaces the file's agent in this studio: say so once
		// in the log; the page says it for good.
		s.Log.Info("stored agent replaces a file agent", "agent", def.Name, "file", d.File, "by", who)
	}
	if err := s.Agents.Check(def); err != nil {
		return nil, httpcore.Error(httpcore.EINVALID, "invalid_agent", err.Error(), nil)
	}
	if req.Description == "" {
		req.Description = def.Description
	}
	saved, err := s.DB.SaveAgent(ctx, &store.Agent{Name: def.Name, Source: req.Source, Description: req.Description, Message: req.Message, UpdatedBy: who}, req.BaseVersion)
	if err != nil {
		return nil, agentErr(err, def.Name)
	}
	s.Log.Info("agent saved", "agent", saved.Name, "version", saved.Version, "by", who)
	s.ReloadAgents(ctx)
	return saved, nil
}

// DeleteAgent deletes a stored agent and every version of it. Chains that
// name it fail validation from then on, naming it.
func (s *Env) DeleteAgent(ctx context.Context, who, name string) error {
	if err := s.DB.DeleteAgent(ctx, name); err != nil {
		if store.ErrorCode(err) == store.ENOTFOUND {
			if d, ok := s.Agents.Get(name); ok && d.File != "" {
				return httpcore.Error(httpcore.ECONFLICT, "agent_from_file", "agent "+Quote(name)+" is loaded from "+d.File+", not stored: remove the file to remove it", nil)
			}
		}
		return agentErr(err, name)
	}
	s.Log.Info("agent deleted", "agent", name, "by", who)
	s.ReloadAgents(ctx)
	return nil
}

// ReloadAgents applies a change to this process's agents now (the others
// follow within their poll).
func (s *Env) ReloadAgents(ctx context.Context) {
	if err := LoadStoredAgents(ctx, s.DB, s.Agents); err != nil {
		s.Log.Warn("agents: could not apply the change now; the next poll will", "err", err)
	}
}

func agentErr(err error, name string) error {
	switch {
	case errors.Is(err, store.ErrNameTaken):
		return httpcore.Error(httpcore.ECONFLICT, "name_taken", "an agent named "+Quote(name)+" is stored already; edit it instead", nil)
	case errors.Is(err, store.ErrVersionConflict):
		return httpcore.Error(httpcore.ECONFLICT, "version_conflict", err.Error(), nil)
	case store.ErrorCode(err) == store.EINVALID:
		return httpcore.Error(httpcore.EINVALID, "invalid_agent", strings.TrimPrefix(err.Error(), "invalid: "), nil)
	}
	return httpcore.StoreErr(err, "agent "+Quote(name))
}
