package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chainstudio/studio/engine/internal/clip"
)

// Progress is one progress notification of a running call, as the server
// sent it (Total is 0 when the server does not know it).
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// maxProgressMessage bounds a progress message, which a node's events carry.
const maxProgressMessage = 1 << 10

type progressKey struct{}

// WithProgress returns a context whose calls ask the server for progress and
// hand each notification to f. f runs on the session's reading goroutine: it
// must return quickly.
func WithProgress(ctx context.Context, f func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

func progressFunc(ctx context.Context) func(Progress) {
	f, _ := ctx.Value(progressKey{}).(func(Progress))
	return f
}

// progressTable routes a server's progress notifications to the calls that
// asked for them, by token.
type progressTable struct {
	mu      sync.Mutex
	next    uint64
	fs      map[string]func(Progress)
	pending map[string]int // notifications read, not yet delivered
	changed chan struct{}  // closed when a pending count falls
}

func (t *progressTable) add(f func(Progress)) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	token := fmt.Sprintf("cs-%d", t.next)
	if t.fs == nil {
		t.fs = map[string]func(Progress){}
	}
	t.fs[token] = f
	return token
}

func (t *progressTable) remove(token string) {
	t.mu.Lock()
	delete(t.fs, token)
	delete(t.pending, token)
	t.mu.Unlock()
}

// report passes a notification on; one for a token no call holds (a late
// one, or a server's invention) is dropped.
func (t *progressTable) report(p *sdk.ProgressNotificationParams) {
	if p == nil {
		return
	}
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	t.mu.Lock()
	f := t.fs[token]
	t.mu.Unlock()
	if f != nil {
		f(Progress{Progress: p.Progress, Total: p.Total, Message: clip.String(p.Message, maxProgressMessage)})
	}
	t.delivered(token)
}

// Delivery of the last notifications. The SDK hands a server's
// notifications to their handler on a goroutine of their own, in order,
// but a call's result straight to the caller: a call could return, and
// its token be removed, while its last progress notifications still wait
// for the handler. So the transport's reader counts each progress
// notification of a known token as it is read (before anything read after
// it, the result included), the handler counts it delivered, and a call
// waits for the two counts to meet before it returns.

// sniffed notes a progress notification read for token.
func (t *progressTable) sniffed(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.fs[token]; !ok {
		return // a late one, or another client's token: nobody waits for it
	}
	if t.pending == nil {
		t.pending = map[string]int{}
	}
	t.pending[token]++
}

// delivered notes the handler is done with one of token's notifications.
func (t *progressTable) delivered(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[token] <= 0 {
		return
	}
	if t.pending[token]--; t.pending[token] == 0 {
		delete(t.pending, token)
	}
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// drain waits until every progress notification read for token has been
// delivered, ctx ends or maxDrain passes (a handler that never returns
// must not hold the call).
func (t *progressTable) drain(ctx context.Context, token string) {
	timer := time.NewTimer(maxDrain)
	defer timer.Stop()
	for {
		t.mu.Lock()
		if t.pending[token] == 0 {
			t.mu.Unlock()
			return
		}
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// maxDrain bounds how long a finished call waits for its last progress
// notifications to be delivered.
const maxDrain = 5 * time.Second

// progressSniffer passes a transport's inbound bytes through unchanged,
// reading each line (a stdio frame, an SSE "data:" line) that is a progress
// notification and telling the table of it. Lines longer than
// maxSniffLine are not progress notifications the studio waits for.
type progressSniffer struct {
	r     io.ReadCloser
	table *progressTable
	line  []byte
	skip  bool // the current line is over maxSniffLine
}

const maxSniffLine = 8 << 10

func (s *progressSniffer) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if !s.skip {
			if len(s.line)+len(part) > maxSniffLine {
				s.skip, s.line = true, s.line[:0]
			} else {
				s.line = append(s.line, part...)
			}
		}
		if i < 0 {
			break
		}
		if !s.skip {
			s.look(s.line)
		}
		s.line, s.skip = s.line[:0], false
		b = b[i+1:]
	}
	return n, err
}

func (s *progressSniffer) Close() error { return s.r.Close() }

var progressMethod = []byte(`"notifications/progress"`)

func (s *progressSniffer) look(line []byte) {
	if !bytes.Contains(line, progressMethod) {
		return
	}
	line = bytes.TrimSpace(line)
	if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		line = bytes.TrimSpace(rest)
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Token any `json:"progressToken"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != "notifications/progress" {
		return
	}
	if token, ok := msg.Params.Token.(string); ok {
		s.table.sniffed(token)
	}
}
