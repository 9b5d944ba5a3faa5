package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/internal/clip"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/spend"
	"github.com/chainstudio/studio/engine/tool"
)

// Bounds of an agent's memory block.
const (
	DefaultMemoryMessages = 20
	MaxMemoryMessages     = 200
	MaxMemoryTokens       = 1 << 20
	// MaxSessionBytes bounds a session key: it names a conversation in
	// the store and in URLs.
	MaxSessionBytes = 200
	// maxKeyBytes bounds an append's key as the store keeps it.
	maxKeyBytes = 200
)

// StepMemory reports which earlier turns of a conversation a model call
// was sent.
const StepMemory = "memory"

// Memory is an agent's conversation memory (memory: in YAML, config.memory
// on a node): turns kept by a session key, sent again to the model before
// the next user message with the same key.
type Memory struct {
	// SessionKey is an expression over the node's input (input.user_id);
	// an empty or null result means no memory for that call.
	SessionKey  string `yaml:"session_key" json:"session_key"`
	MaxMessages *Int   `yaml:"max_messages,omitempty" json:"max_messages,omitempty"`
	// MaxTokens bounds the earlier turns sent, estimated as spend does.
	MaxTokens *Int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
}

// MaxMessagesOrDefault is the message window.
func (m *Memory) MaxMessagesOrDefault() int {
	if m.MaxMessages == nil {
		return DefaultMemoryMessages
	}
	return int(*m.MaxMessages)
}

// problems checks the memory block, each message starting with its field.
func (m *Memory) problems(model bool) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !model {
		add("memory is used only by model agents (this agent has no model)")
	}
	if m.SessionKey == "" {
		add("memory.session_key is required: an expression over the node's input naming the conversation, e.g. input.user_id")
	} else if _, err := parseExpr(m.SessionKey); err != nil {
		add("memory.session_key: %v", err)
	}
	if m.MaxMessages != nil && (*m.MaxMessages < 1 || *m.MaxMessages > MaxMemoryMessages) {
		add("memory.max_messages is %d; it must be between 1 and %d (default %d)", *m.MaxMessages, MaxMemoryMessages, DefaultMemoryMessages)
	}
	if m.MaxTokens != nil && (*m.MaxTokens < 1 || *m.MaxTokens > MaxMemoryTokens) {
		add("memory.max_tokens is %d; it must be between 1 and %d", *m.MaxTokens, MaxMemoryTokens)
	}
	return errs
}

// Roles of a stored turn.
const (
	TurnUser      = "user"
	TurnAssistant = "assistant"
)

// Turn is one message of a kept conversation: the user message or the
// agent's final answer (never tool-call internals).
type Turn struct {
	ID   string    `json:"id"` // assigned by the store
	Role string    `json:"role"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// History is what Load found: the newest turns, oldest first, and how many
// the session holds in all.
type History struct {
	Turns []Turn
	Total int
}

// Conversations keeps agents' conversations (a host's store). Scope names
// the agent (see conversationScope), session the conversation in it.
type Conversations interface {
	// Load returns the session's newest limit turns, oldest first.
	Load(ctx context.Context, scope, session string, limit int) (History, error)
	// Append adds turns to the session once per key: appending again with
	// a key already used does nothing, so a node retried or replayed after
	// a crash does not repeat its turns.
	Append(ctx context.Context, scope, session, key string, turns []Turn) error
}

// memoryState is what a model agent with memory carries through its loop
// (and a pause): where its turns go and which earlier ones it was sent.
type memoryState struct {
	Scope    string    `json:"scope"`
	Session  string    `json:"session"`
	User     string    `json:"user"` // this run's user message, to keep
	Included []turnRef `json:"included,omitempty"`
	Dropped  int       `json:"dropped"`
}

type turnRef struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// conversationScope is the scope an agent's turns are kept under: a named
// agent's name (it is the same agent wherever a node names it), or for an
// agent defined in its node, the chain's name and the node's id joined by
// ":" (which agent names cannot hold, so the two never meet).
func conversationScope(ctx context.Context, def *Definition) string {
	if !def.inline {
		return def.Name
	}
	ex, _ := tool.ExecutionFrom(ctx)
	node := ex.NodeID
	if node == "" {
		node = def.Name
	}
	return ex.Chain + ":" + node
}

// sessionOf evaluates the memory's session key over the node's input, as
// the prompt reads it: "" (no memory for this call) for an empty or null
// result.
func sessionOf(ctx context.Context, m *Memory, input map[string]any) (string, error) {
	e, err := parseExpr(m.SessionKey)
	if err != nil {
		return "", fmt.Errorf("memory.session_key: %w", err)
	}
	sc := expr.MapScope{"query": input["query"], "context": input["context"], "session_id": input["session_id"], "input": input}
	v, err := e.EvalContext(ctx, sc, false)
	if err != nil {
		return "", fmt.Errorf("memory.session_key %q: %w", m.SessionKey, err)
	}
	s := asText(v)
	if len(s) > MaxSessionBytes {
		return "", fmt.Errorf("memory.session_key %q is %d bytes, over the limit of %d", m.SessionKey, len(s), MaxSessionBytes)
	}
	return s, nil
}

// recall loads the session's earlier turns within the windows: newest
// kept, the oldest dropped first, and a leading answer without its
// question dropped too (models expect a conversation to open with the
// user).
func (rt *Runtime) recall(ctx context.Context, def *Definition, input map[string]any, em *stepEmitter) (*memoryState, []llm.Message, error) {
	m := def.Memory
	if m == nil {
		return nil, nil, nil
	}
	session, err := sessionOf(ctx, m, input)
	if err != nil {
		return nil, nil, fmt.Errorf("agent %q: %w", def.Name, err)
	}
	if session == "" {
		return nil, nil, nil
	}
	if rt.Conversations == nil {
		em.step(StepWarning, map[string]any{"text": "memory is off: this host keeps no conversations, so the model is sent no earlier turns and this one is not kept"})
		return nil, nil, nil
	}
	ms := &memoryState{Scope: conversationScope(ctx, def), Session: session}
	h, err := rt.Conversations.Load(ctx, ms.Scope, session, m.MaxMessagesOrDefault())
	if err != nil {
		return nil, nil, fmt.Errorf("agent %q: memory: loading conversation %q: %w", def.Name, session, err)
	}
	turns := h.Turns
	if m.MaxTokens != nil {
		budget, used := int64(*m.MaxTokens), int64(0)
		keep := len(turns)
		for keep > 0 {
			t := spend.InputTokens(len(turns[keep-1].Text))
			if used+t > budget {
				break
			}
			used += t
			keep--
		}
		turns = turns[keep:]
	}
	for len(turns) > 0 && turns[0].Role != TurnUser {
		turns = turns[1:]
	}
	msgs := make([]llm.Message, 0, len(turns))
	refs := make([]any, 0, len(turns))
	for _, t := range turns {
		role := llm.RoleUser
		if t.Role == TurnAssistant {
			role = llm.RoleAssistant
		}
		msgs = append(msgs, llm.Message{Role: role, Text: t.Text})
		ms.Included = append(ms.Included, turnRef{ID: t.ID, At: t.At})
		refs = append(refs, map[string]any{"id": t.ID, "role": t.Role, "at": t.At.UTC().Format(time.RFC3339Nano)})
	}
	ms.Dropped = max(h.Total-len(turns), 0)
	em.step(StepMemory, map[string]any{"scope": ms.Scope, "session": session, "included": len(turns), "dropped": ms.Dropped, "turns": refs})
	return ms, msgs, nil
}

// remember keeps this run's user message and final answer, once per node
// execution, and says in the output which turns the model was sent. A
// store that fails does not fail the node (its answer stands, and a retry
// would call the model again): the output and a warning say so.
func (rt *Runtime) remember(ctx context.Context, def *Definition, st *loopState, out map[string]any, em *stepEmitter) {
	ms := st.Memory
	if ms == nil || rt.Conversations == nil {
		return
	}
	view := map[string]any{"session": ms.Session, "included": len(ms.Included), "dropped": ms.Dropped}
	out["memory"] = view
	answer, _ := out["answer"].(string)
	if answer == "" {
		return // nothing was said: an empty turn would be refused when sent again
	}
	now := time.Now().UTC()
	turns := []Turn{{Role: TurnUser, Text: ms.User, At: now}, {Role: TurnAssistant, Text: answer, At: now}}
	key := executionKey(ctx)
	if err := rt.Conversations.Append(ctx, ms.Scope, ms.Session, key, turns); err != nil {
		msg := "memory: this turn was not kept: " + clip.String(err.Error(), 500)
		view["error"] = msg
		em.step(StepWarning, map[string]any{"text": msg})
	}
}

// executionKey is the append's idempotency key: the node execution, or a
// fresh one for an agent run outside a chain run (nothing replays it).
func executionKey(ctx context.Context) string {
	if ex, ok := tool.ExecutionFrom(ctx); ok && ex.RunID != "" {
		k := ex.Key()
		if len(k) > maxKeyBytes { // long node ids: a digest, still one per execution
			sum := sha256.Sum256([]byte(k))
			return "sha256:" + hex.EncodeToString(sum[:])
		}
		return k
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "once/" + hex.EncodeToString(b[:])
}
