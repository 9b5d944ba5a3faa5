package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/llm/anthropic"
	"github.com/chainstudio/studio/engine/llm/gemini"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/engine/llm/openai"
)

// fake is one provider's fake with the provider, built on the official
// SDK, pointed at it.
type fake struct {
	provider llm.Provider
	requests func() []map[string]any
	paths    func() []string
}

var fakes = []struct {
	name  string
	start func(t *testing.T, turns ...llmtest.Turn) fake
}{
	{"openai", func(t *testing.T, turns ...llmtest.Turn) fake {
		f := llmtest.NewOpenAI(t, turns...)
		return fake{build(t, openai.New, f.URL+"/v1", f.Client()), f.Requests, f.Paths}
	}},
	{"anthropic", func(t *testing.T, turns ...llmtest.Turn) fake {
		f := llmtest.NewAnthropic(t, turns...)
		return fake{build(t, anthropic.New, f.URL, f.Client()), f.Requests, f.Paths}
	}},
	{"gemini", func(t *testing.T, turns ...llmtest.Turn) fake {
		f := llmtest.NewGemini(t, turns...)
		return fake{build(t, gemini.New, f.URL, f.Client()), f.Requests, f.Paths}
	}},
}

func build(t *testing.T, newProvider func(llm.Config) (llm.Provider, error), base string, hc *http.Client) llm.Provider {
	t.Helper()
	p, err := newProvider(llm.Config{BaseURL: base, APIKey: "test-key", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var calls = []llmtest.Call{
	{ID: "call_1", Name: "get_weather", Args: `{"city":"Oslo","days":3}`},
	{ID: "call_2", Name: "now", Args: `{}`},
}

var tools = []llm.Tool{
	{Name: "get_weather", Description: "The weather.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}`)},
	{Name: "now", Description: "The time.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
}

func ask(text string) llm.Request {
	return llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: text}}, Tools: tools}
}

// Each fake's reply reads the same through its provider, streamed or not:
// the text (in several pieces when streamed), the calls with their
// arguments, the stop reason and the usage.
func TestFakesAnswerThroughTheirProviders(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streamed=%v", fk.name, streamed), func(t *testing.T) {
				t.Parallel()
				f := fk.start(t, llmtest.Turn{Text: "Checking the weather. ", Calls: calls}, llmtest.Turn{Text: "It is cold."})
				var deltas []string
				var stream *llm.Stream
				if streamed {
					stream = &llm.Stream{Text: func(d string) { deltas = append(deltas, d) }}
				}
				reply, err := f.provider.Chat(context.Background(), ask("Oslo?"), stream)
				if err != nil {
					t.Fatal(err)
				}
				if reply.Text != "Checking the weather. " || reply.Stop != llm.StopToolCalls {
					t.Fatalf("reply %+v", reply)
				}
				if streamed && (len(deltas) != 3 || strings.Join(deltas, "") != reply.Text) {
					t.Fatalf("deltas %q", deltas)
				}
				if len(reply.ToolCalls) != 2 {
					t.Fatalf("calls %+v", reply.ToolCalls)
				}
				for i, c := range reply.ToolCalls {
					var got, want any
					_ = json.Unmarshal(c.Arguments, &got)
					_ = json.Unmarshal([]byte(calls[i].Args), &want)
					if c.Name != calls[i].Name || !reflect.DeepEqual(got, want) {
						t.Fatalf("call %d: %s %s", i, c.Name, c.Arguments)
					}
					switch fk.name {
					case "gemini":
						// No ids on the wire: the provider makes them up;
						// the signature is the fake's.
						if c.ID != fmt.Sprintf("call_%d", i+1) || string(c.Signature) != "sig-"+calls[i].ID {
							t.Fatalf("call %d: id %q signature %q", i, c.ID, c.Signature)
						}
					default:
						if c.ID != calls[i].ID {
							t.Fatalf("call %d: id %q", i, c.ID)
						}
					}
				}
				if want := (llm.Usage{InputTokens: 10, OutputTokens: 3, Reported: true}); reply.Usage != want {
					t.Fatalf("usage %+v", reply.Usage)
				}
				reply, err = f.provider.Chat(context.Background(), ask("and tomorrow?"), stream)
				if err != nil || reply.Text != "It is cold." || reply.Stop != llm.StopEnd || reply.Usage.InputTokens != 20 {
					t.Fatalf("second reply %+v, %v", reply, err)
				}
				if reqs := f.requests(); len(reqs) != 2 {
					t.Fatalf("%d requests recorded", len(reqs))
				}
				if paths := f.paths(); len(paths) != 2 {
					t.Fatalf("paths %v", paths)
				}
			})
		}
	}
}

// An error turn answers with its status in the API's own error shape, so
// the provider reads the API's error type and message from it.
func TestFakesAnswerErrorsInTheAPIsShape(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		t.Run(fk.name, func(t *testing.T) {
			t.Parallel()
			f := fk.start(t, llmtest.Turn{Status: 429, Body: "slow down", Header: map[string]string{"Retry-After": "7"}})
			_, err := f.provider.Chat(context.Background(), ask("x"), &llm.Stream{Text: func(string) {}})
			if err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "slow down") {
				t.Fatalf("err %v", err)
			}
			var ae *anthropic.APIError
			var ge *gemini.Error
			switch {
			case fk.name == "anthropic" && (!errors.As(err, &ae) || ae.Type != "rate_limit_error"):
				t.Fatalf("err %#v, want a rate_limit_error", err)
			case fk.name == "gemini" && (!errors.As(err, &ge) || !strings.Contains(ge.Message, "RESOURCE_EXHAUSTED")):
				t.Fatalf("err %#v, want RESOURCE_EXHAUSTED", err)
			}
			if n := len(f.requests()); n != 1 {
				t.Fatalf("%d requests: the SDK retried", n)
			}
			// Past the end of the script: a 500.
			_, err = f.provider.Chat(context.Background(), ask("again"), nil)
			if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "the script has no turn 2") {
				t.Fatalf("err %v", err)
			}
		})
	}
}

// A cut turn ends the stream after its text; the provider says the stream
// ended early.
func TestFakesCutTheStream(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		t.Run(fk.name, func(t *testing.T) {
			t.Parallel()
			f := fk.start(t, llmtest.Turn{Text: "half an answ", Calls: calls, Cut: true})
			var text strings.Builder
			_, err := f.provider.Chat(context.Background(), ask("x"), &llm.Stream{Text: func(d string) { text.WriteString(d) }})
			if err == nil || !strings.Contains(err.Error(), "stream ended before") {
				t.Fatalf("err %v", err)
			}
			if text.String() != "half an answ" {
				t.Fatalf("streamed %q before the cut", text.String())
			}
		})
	}
}

// A held turn streams its text and waits, before its calls, until Hold
// is closed, or until the client goes away.
func TestFakesHoldTheTurnOpen(t *testing.T) {
	t.Parallel()
	for _, fk := range fakes {
		t.Run(fk.name, func(t *testing.T) {
			t.Parallel()
			hold := make(chan struct{})
			f := fk.start(t, llmtest.Turn{Text: "Checking ", Calls: calls, Hold: hold}, llmtest.Turn{Text: "Checking ", Calls: calls, Hold: make(chan struct{})})
			// Were the text not sent before the hold, nothing would close
			// it: the deadline turns that into a failure.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var once sync.Once
			var text string
			reply, err := f.provider.Chat(ctx, ask("x"), &llm.Stream{Text: func(d string) {
				text += d
				once.Do(func() { close(hold) })
			}})
			if err != nil || len(reply.ToolCalls) != 2 || text != "Checking " {
				t.Fatalf("reply %+v, %v (streamed %q)", reply, err, text)
			}
			// The second turn is never let go: cancelling the call ends it.
			ctx2, cancel2 := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := f.provider.Chat(ctx2, ask("x"), &llm.Stream{Text: func(string) { cancel2() }})
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err %v, want the call's cancellation", err)
				}
			case <-ctx.Done():
				t.Fatal("the held turn did not end with its request")
			}
		})
	}
}
