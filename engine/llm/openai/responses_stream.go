package openai

import (
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/chainstudio/studio/engine/llm"
)

// readResponseStream reads a streamed Responses reply to its end: text
// deltas go to out as they arrive, function calls are assembled from the
// item that opens each one and its argument deltas, and the closing
// response.completed (or response.incomplete) brings the status, the model
// and the usage.
func readResponseStream(s *ssestream.Stream[responses.ResponseStreamEventUnion], out *llm.Stream) (*llm.Reply, error) {
	defer s.Close()
	reply := &llm.Reply{}
	var text, refusal strings.Builder
	var calls itemCalls
	var final *responses.Response
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.created", "response.in_progress":
			if ev.Response.Model != "" {
				reply.Model = ev.Response.Model
			}
		case "response.output_text.delta":
			if ev.Delta != "" {
				text.WriteString(ev.Delta)
				if out.Text != nil {
					out.Text(ev.Delta)
				}
			}
		case "response.refusal.delta":
			refusal.WriteString(ev.Delta)
		case "response.output_item.added":
			if ev.Item.Type == "function_call" {
				calls.open(ev.OutputIndex, ev.Item)
			}
		case "response.function_call_arguments.delta":
			calls.more(ev.OutputIndex, ev.Delta)
		case "response.function_call_arguments.done":
			calls.whole(ev.OutputIndex, ev.Arguments)
		case "response.output_item.done":
			if ev.Item.Type == "function_call" {
				// The finished item is the call as the server holds it:
				// its arguments win over the deltas put together.
				calls.open(ev.OutputIndex, ev.Item)
				calls.whole(ev.OutputIndex, ev.Item.Arguments.OfString)
			}
		case "response.completed", "response.incomplete":
			res := ev.Response
			final = &res
		case "response.failed":
			res := ev.Response
			if err := failedResponse(&res); err != nil {
				return nil, err
			}
			return nil, serverError("the response failed", "", "")
		case "error":
			return nil, serverError("the server sent an error", ev.Code, ev.Message)
		}
		if final != nil {
			break
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if final == nil {
		// A stream cut in the middle ends like a finished one: without
		// response.completed what arrived is not the reply.
		return nil, llm.ErrIncomplete
	}
	if final.Model != "" {
		reply.Model = final.Model
	}
	if final.JSON.Usage.Valid() {
		reply.Usage = usage(final.Usage)
	}
	reply.Text = text.String()
	reply.ToolCalls = calls.done()
	finish(reply, finishReason(final), refusal.String())
	return reply, nil
}

// itemCalls puts streamed function calls together by the output index the
// events name.
type itemCalls struct {
	calls []*streamedCall
	at    map[int64]*streamedCall
}

type streamedCall struct {
	id, name string
	args     strings.Builder
	// complete is set when the whole arguments arrived (the .done events):
	// they replace the deltas, and no later delta extends them.
	complete bool
}

func (a *itemCalls) get(index int64) *streamedCall {
	if a.at == nil {
		a.at = map[int64]*streamedCall{}
	}
	c := a.at[index]
	if c == nil {
		c = &streamedCall{}
		a.at[index] = c
		a.calls = append(a.calls, c)
	}
	return c
}

func (a *itemCalls) open(index int64, item responses.ResponseOutputItemUnion) {
	c := a.get(index)
	if item.CallID != "" {
		c.id = item.CallID
	}
	if item.Name != "" {
		c.name = item.Name
	}
	if args := item.Arguments.OfString; args != "" && c.args.Len() == 0 {
		c.args.WriteString(args)
	}
}

func (a *itemCalls) more(index int64, delta string) {
	if c := a.get(index); !c.complete {
		c.args.WriteString(delta)
	}
}

func (a *itemCalls) whole(index int64, args string) {
	if args == "" {
		return // a call without arguments, or a server that left them out
	}
	c := a.get(index)
	c.args.Reset()
	c.args.WriteString(args)
	c.complete = true
}

func (a *itemCalls) done() []llm.ToolCall {
	var out []llm.ToolCall
	for _, c := range a.calls {
		out = append(out, llm.ToolCall{ID: c.id, Name: c.name, Arguments: arguments(c.args.String())})
	}
	return out
}
