package openai

import (
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/chainstudio/studio/engine/llm"
)

// readStream reads a streamed reply to its end, handing text to out as it
// arrives and assembling tool calls from their pieces.
func readStream(s *ssestream.Stream[sdk.ChatCompletionChunk], out *llm.Stream) (*llm.Reply, error) {
	defer s.Close()
	reply := &llm.Reply{}
	var text, refusal strings.Builder
	var calls callAssembler
	reason := ""
	for s.Next() {
		chunk := s.Current()
		if chunk.Model != "" {
			reply.Model = chunk.Model
		}
		if chunk.JSON.Usage.Valid() {
			// Asked for with stream_options.include_usage: a last chunk
			// with no choices carries it.
			reply.Usage = llm.Usage{
				InputTokens:  chunk.Usage.PromptTokens,
				OutputTokens: chunk.Usage.CompletionTokens,
				Reported:     true,
			}
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue // only one choice is asked for
			}
			if d := c.Delta.Content; d != "" {
				text.WriteString(d)
				if out.Text != nil {
					out.Text(d)
				}
			}
			refusal.WriteString(c.Delta.Refusal)
			for _, tc := range c.Delta.ToolCalls {
				calls.add(tc)
			}
			if c.FinishReason != "" {
				reason = c.FinishReason
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if reason == "" {
		// A stream cut in the middle ends like a finished one, without
		// [DONE] and without a finish reason: what arrived is not the reply.
		return nil, llm.ErrIncomplete
	}
	reply.Text = text.String()
	reply.ToolCalls = calls.done()
	finish(reply, reason, refusal.String())
	return reply, nil
}

// callAssembler puts streamed tool calls together: the first piece of a
// call brings its index, id and name, the following ones more of its
// arguments under the same index.
type callAssembler struct {
	calls []*pendingCall
	at    map[int64]*pendingCall // the call each index is filling now
}

type pendingCall struct {
	id, name string
	args     strings.Builder
}

func (a *callAssembler) add(tc sdk.ChatCompletionChunkChoiceDeltaToolCall) {
	if a.at == nil {
		a.at = map[int64]*pendingCall{}
	}
	c := a.at[tc.Index]
	// A new id under an index already used is a new call: some compatible
	// servers send each whole call in one piece, all at index 0.
	if c == nil || (tc.ID != "" && c.id != "" && tc.ID != c.id) {
		c = &pendingCall{}
		a.at[tc.Index] = c
		a.calls = append(a.calls, c)
	}
	if tc.ID != "" {
		c.id = tc.ID
	}
	if tc.Function.Name != "" {
		c.name = tc.Function.Name
	}
	c.args.WriteString(tc.Function.Arguments)
}

func (a *callAssembler) done() []llm.ToolCall {
	var out []llm.ToolCall
	for _, c := range a.calls {
		out = append(out, llm.ToolCall{ID: c.id, Name: c.name, Arguments: arguments(c.args.String())})
	}
	return out
}
