package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// script is what every fake shares: the turns to answer with, in order,
// and the requests taken so far.
type script struct {
	t     testing.TB
	mu    sync.Mutex
	turns []Turn
	seen  []map[string]any
	paths []string
}

// take records r's JSON body and returns it with its 1-based number and
// the turn that answers it; ok is false past the end of the script (or
// for a body that is not JSON), with the error already written by fail.
func (s *script) take(w http.ResponseWriter, r *http.Request, fail func(w http.ResponseWriter, status int, msg string)) (req map[string]any, n int, turn Turn, ok bool) {
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		fail(w, http.StatusBadRequest, "the request body is not a JSON object: "+err.Error())
		return nil, 0, Turn{}, false
	}
	s.mu.Lock()
	s.seen = append(s.seen, req)
	s.paths = append(s.paths, r.URL.RequestURI())
	n = len(s.seen)
	s.mu.Unlock()
	if n > len(s.turns) {
		fail(w, http.StatusInternalServerError, "the script has no turn "+strconv.Itoa(n))
		return req, n, Turn{}, false
	}
	turn = s.turns[n-1]
	for k, v := range turn.Header {
		w.Header().Set(k, v)
	}
	return req, n, turn, true
}

// Requests are the request bodies received so far, in order.
func (s *script) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.seen...)
}

// Paths are the requests' paths with their queries, in order.
func (s *script) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// errorBody is turn's Body as sent: as written when it is a JSON object,
// else the message of wrap's error object.
func errorBody(turn Turn, wrap func(status int, msg string) any) []byte {
	var obj map[string]any
	if json.Unmarshal([]byte(turn.Body), &obj) == nil {
		return []byte(turn.Body)
	}
	msg := turn.Body
	if msg == "" {
		msg = http.StatusText(turn.Status)
	}
	b, _ := json.Marshal(wrap(turn.Status, msg))
	return b
}

// hold waits for turn.Hold, when set; false means the request's context
// ended first (the client is gone).
func hold(turn Turn, r *http.Request) bool {
	if turn.Hold == nil {
		return true
	}
	select {
	case <-turn.Hold:
		return true
	case <-r.Context().Done():
		return false
	}
}

// words splits text into the pieces a stream sends, each word with the
// space after it.
func words(text string) []string {
	var out []string
	for _, w := range strings.SplitAfter(text, " ") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// object is args decoded as the JSON object a provider sends whole (not
// as text); a script whose args are not one is a broken test.
func (s *script) object(c Call) json.RawMessage {
	if strings.TrimSpace(c.Args) == "" {
		return json.RawMessage("{}")
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(c.Args), &obj); err != nil {
		s.t.Errorf("llmtest: call %s (%s): this fake sends arguments as a JSON object, and %q is not one: %v", c.ID, c.Name, c.Args, err)
		return json.RawMessage("{}")
	}
	return json.RawMessage(c.Args)
}
