package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/engine/tool"
)

// spans is a tool.Tracer recording the model calls it is asked to trace
// and the requests they carried a trace context on.
type spans struct {
	mu     sync.Mutex
	models []tool.ModelResult
}

func (s *spans) Inject(ctx context.Context, h http.Header) { h.Set("Traceparent", "00-fake") }
func (s *spans) ModelCall(ctx context.Context, _ tool.ModelCall) (context.Context, func(tool.ModelResult)) {
	return ctx, func(r tool.ModelResult) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.models = append(s.models, r)
	}
}
func (s *spans) ToolCall(ctx context.Context, _ tool.ToolCall) (context.Context, func(error)) {
	return ctx, func(error) {}
}

func (s *spans) results() []tool.ModelResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]tool.ModelResult(nil), s.models...)
}

// A server that ignores stream: true and answers each turn whole is read
// as it answered: one request a turn (not a streamed one and then a plain
// one), each turn's tokens counted, one span per request, and the text
// still shown on the run as the turn's text.
func TestWholeReplyToAStreamedRequestThroughEachProvider(t *testing.T) {
	t.Parallel()
	for _, p := range loopProviders {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			f := p.start(t, llmtest.Turn{Text: loopSaid, Calls: loopCalls, Whole: true}, llmtest.Turn{Text: loopAnswer, Whole: true},
				llmtest.Turn{Text: "a third request", Whole: true})
			rt, def, chainCalls := loopRuntimeAt(t, f.url, providerAgent(p.name))
			tr := &spans{}
			var ev events
			out, err := rt.Invoke(tool.WithTracer(context.Background(), tr), def, map[string]any{"query": "Who is ACME?"}, ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			if out["answer"] != loopAnswer || len(*chainCalls) != 1 {
				t.Fatalf("answer %q, chain calls %v", out["answer"], *chainCalls)
			}
			if n := len(f.requests()); n != 2 {
				t.Fatalf("%d requests for 2 turns", n)
			}
			// The fake counts 10 input tokens a request: 10, then 20.
			usage := ev.steps(engine.StepModelUsage)
			if len(usage) != 2 || usage[0]["input_tokens"] != int64(10) || usage[1]["input_tokens"] != int64(20) || usage[1]["output_tokens"] != int64(3) {
				t.Fatalf("usage %v", usage)
			}
			got := tr.results()
			if len(got) != 2 || got[0].InputTokens != 10 || got[1].InputTokens != 20 {
				t.Fatalf("spans %+v, want one per request with its tokens", got)
			}
			for turn, want := range map[int]string{1: loopSaid, 2: loopAnswer} {
				var text strings.Builder
				for _, m := range ev.steps(StepText) {
					if m["turn"] == turn {
						text.WriteString(m["text"].(string))
					}
				}
				if text.String() != want {
					t.Fatalf("turn %d shows %q, want %q", turn, text.String(), want)
				}
			}
			checkSecondRequest(t, p.name, true, f)
		})
	}
}

// A stream labelled as something else (text/plain) is still read as the
// stream it is, in one request.
func TestMislabelledStreamIsReadAsAStream(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		for _, chunk := range []string{
			`{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello "},"finish_reason":null}]}`,
			`{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"there."},"finish_reason":"stop"}]}`,
			`{"id":"c","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	rt, def, _ := loopRuntimeAt(t, srv.URL+"/v1", "name: helper\nmodel: {url: \"%URL%\", name: m}\n")
	var ev events
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "hi"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	usage := ev.steps(engine.StepModelUsage)
	if out["answer"] != "Hello there." || n != 1 || len(usage) != 1 || usage[0]["input_tokens"] != int64(7) {
		t.Fatalf("answer %q after %d requests, usage %v", out["answer"], n, usage)
	}
}
