package builtin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/chainstudio/studio/engine/tool"
)

// echoTool returns its input (the same map, not a copy).
func echoTool(_ context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	return in, nil
}

const maxDelayMS = float64(time.Hour / time.Millisecond)

// delayTool sleeps for `ms` milliseconds, then returns its input.
func delayTool(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	ms, ok, err := getNumber("delay", in, "ms")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New(`delay: field "ms" is required`)
	}
	if ms < 0 {
		return nil, fmt.Errorf(`delay: field "ms" must be >= 0, got %v`, ms)
	}
	if ms > maxDelayMS {
		return nil, fmt.Errorf(`delay: field "ms" must be at most %v (1 hour), got %v`, maxDelayMS, ms)
	}
	d := time.Duration(math.Round(ms * float64(time.Millisecond)))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		if data, ok := in["data"]; ok {
			return data, nil
		}
		return in, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

const defaultFailMessage = "fail tool failed"

// failTool fails with `message`; with `until_attempt` N it fails only while
// the attempt number is below N.
func failTool(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	msg, ok, err := getString("fail", in, "message")
	if err != nil {
		return nil, err
	}
	if !ok || msg == "" {
		msg = defaultFailMessage
	}
	until, hasUntil, err := getNumber("fail", in, "until_attempt")
	if err != nil {
		return nil, err
	}
	if !hasUntil {
		return nil, errors.New(msg)
	}
	if until < 1 || until != math.Trunc(until) {
		return nil, fmt.Errorf(`fail: field "until_attempt" must be a whole number >= 1, got %v`, until)
	}
	attempt := tool.Attempt(ctx)
	if float64(attempt) < until {
		return nil, errors.New(msg)
	}
	return map[string]any{"attempt": float64(attempt), "ok": true}, nil
}

// interruptTool pauses the run with `prompt` (or the whole input) and, once
// resumed, returns the resume value.
func interruptTool(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	if v, ok := tool.Resume(ctx); ok {
		return v, nil
	}
	if p, ok := in["prompt"]; ok {
		return nil, tool.Interrupt(p)
	}
	return nil, tool.Interrupt(in)
}
