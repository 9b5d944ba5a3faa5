package runs

import (
	"context"
	"strconv"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/store"
)

// conversations is the store's conversations as the agent runtime asks for
// them (agent.Conversations): the engine never imports store.
type conversations struct{ db store.ConversationStore }

var _ agent.Conversations = conversations{}

func (c conversations) Load(ctx context.Context, scope, session string, limit int) (agent.History, error) {
	turns, total, err := c.db.LoadTurns(ctx, scope, session, limit)
	if err != nil {
		return agent.History{}, err
	}
	h := agent.History{Turns: make([]agent.Turn, len(turns)), Total: total}
	for i, t := range turns {
		h.Turns[i] = agent.Turn{ID: strconv.FormatInt(t.ID, 10), Role: t.Role, Text: t.Text, At: t.At}
	}
	return h, nil
}

func (c conversations) Append(ctx context.Context, scope, session, key string, turns []agent.Turn) error {
	rows := make([]store.ConversationTurn, len(turns))
	for i, t := range turns {
		rows[i] = store.ConversationTurn{Role: t.Role, Text: t.Text, At: t.At}
	}
	return c.db.AppendTurns(ctx, scope, session, key, rows)
}
