package agent

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/chainstudio/studio/engine/llm"
)

// Retry is how a model call the provider answered 429 (rate limited) or
// 5xx (overloaded, down) is tried again: with exponential backoff and
// jitter, or after the provider's Retry-After when it gives one, and only
// while the call's deadline (the node's timeout) leaves room for the wait.
// Nothing else is retried: a 4xx is the request's fault, and a call whose
// connection failed may have been made and billed.
type Retry struct {
	// Attempts is the most calls made in all (0: 4; 1: no retry).
	Attempts int
	// Base is the first backoff, doubled at each retry (0: 500 ms).
	Base time.Duration
	// Max caps one wait, the provider's Retry-After included (0: 20 s).
	Max time.Duration
}

// DefaultRetry is Retry's zero value made explicit.
var DefaultRetry = Retry{Attempts: 4, Base: 500 * time.Millisecond, Max: 20 * time.Second}

func (r Retry) orDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = DefaultRetry.Attempts
	}
	if r.Base <= 0 {
		r.Base = DefaultRetry.Base
	}
	if r.Max <= 0 {
		r.Max = DefaultRetry.Max
	}
	return r
}

// retried is what a call's retries came to, for its error message.
type retried struct {
	attempts int    // calls made
	status   int    // the last one's status
	stopped  string // why no further retry was made, when the deadline stopped it
}

// retryable says whether a provider's answer status is worth asking again.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}

// chat makes p's call, again after a wait while its answer is retryable.
func (r Retry) chat(ctx context.Context, p llm.Provider, req llm.Request, stream *llm.Stream, seen *answerSeen) (*llm.Reply, error, retried) {
	r = r.orDefaults()
	var tries retried
	for {
		seen.status, seen.retryAfter = 0, ""
		reply, err := p.Chat(ctx, req, stream)
		tries.attempts++
		tries.status = seen.status
		if err == nil || errors.Is(err, errNotStreamed) || !retryable(seen.status) || ctx.Err() != nil {
			return reply, err, tries
		}
		if tries.attempts >= r.Attempts {
			return reply, err, tries
		}
		wait := r.wait(tries.attempts, seen.retryAfter, time.Now())
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			tries.stopped = "; the node's timeout leaves no time to wait " + wait.Round(time.Millisecond).String() + " for another"
			return reply, err, tries
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return reply, err, tries
		case <-t.C:
		}
	}
}

// wait is the pause before retry n+1: the provider's Retry-After (seconds
// or an HTTP date) when it sent one, else Base doubled n-1 times with up
// to half of it added at random (so parallel branches do not ask again
// together); never over Max.
func (r Retry) wait(n int, retryAfter string, now time.Time) time.Duration {
	d := time.Duration(0)
	if retryAfter != "" {
		if secs, err := strconv.ParseFloat(retryAfter, 64); err == nil && secs >= 0 {
			d = time.Duration(secs * float64(time.Second))
		} else if at, err := http.ParseTime(retryAfter); err == nil {
			d = at.Sub(now)
		}
	}
	if d <= 0 {
		d = r.Base << (n - 1)
		if d <= 0 || d > r.Max { // shifted past the type's range
			d = r.Max
		}
		d += time.Duration(rand.Int64N(int64(d)/2 + 1))
	}
	return min(d, r.Max)
}
