package mcp

import (
	"context"
	"fmt"
	"sync"

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
	mu   sync.Mutex
	next uint64
	fs   map[string]func(Progress)
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
}
