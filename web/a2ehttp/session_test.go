package a2ehttp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/engine/chain"
)

// A session holds no more than its limit: a message is reserved before it
// is taken, an event that does not fit is dropped, a chain/resp that does
// not fit is replaced by one saying so, and what the stream wrote is
// given back.
func TestSessionHoldsWithinItsLimit(t *testing.T) {
	t.Parallel()
	const limit = 10 << 10
	h := &httpSession{limit: limit, signal: make(chan struct{}, 1)}
	tk, ok := h.reserve(6 << 10)
	if !ok {
		t.Fatal("the first reservation was refused")
	}
	if _, ok := h.reserve(5 << 10); ok {
		t.Fatal("a reservation past the limit was taken")
	}
	big := strings.Repeat("x", 5<<10)
	h.push(tk, a2e.NewEventMessage("r1", engine.Event{NodeID: "n", Phase: engine.PhaseDone, Output: big}))
	if h.dropped != 1 || len(h.queue) != 0 {
		t.Fatalf("an event past the free room: %d dropped, %d queued", h.dropped, len(h.queue))
	}
	resp := a2e.NewResponseMessage(&chain.Request{ID: "r1", ChainID: "c"}, &engine.Result{FinalOutput: strings.Repeat("y", limit)})
	h.push(tk, resp)
	if len(h.queue) != 1 || h.resMsgs != 0 {
		t.Fatalf("the answer: %d queued, %d in flight", len(h.queue), h.resMsgs)
	}
	var got a2e.ResponseMessage
	if err := json.Unmarshal(h.queue[0], &got); err != nil || got.ReqID != "r1" || got.Error == nil || got.Error.Code != CodeResponseTooLarge {
		t.Fatalf("an answer past the limit was kept: %v %s", err, h.queue[0])
	}
	if h.peak > limit {
		t.Fatalf("held %d bytes at most, over the limit of %d", h.peak, limit)
	}
	msgs, closed := h.take()
	n := 0
	for _, m := range msgs {
		n += len(m)
	}
	if h.held() != n || closed {
		t.Fatalf("being written: %d held, want %d (closed %v)", h.held(), n, closed)
	}
	h.written(n)
	if h.held() != 0 {
		t.Fatalf("%d bytes held once written", h.held())
	}
}
