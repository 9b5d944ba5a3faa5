package runs

// The approvals sweeper: deadlines fire without a person, and
// escalation webhooks hear about pauses. It acts through the same paths a
// person does, so several processes sharing a database can sweep at once:
// a timeout is an answer through Resume (the interrupt's claim is atomic:
// one answer wins, the other gets engine.AlreadyResumedError), and each
// notification is claimed in the database before it is sent (at most once).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/store"
)

// SweepStore is what the sweeper reads and claims.
type SweepStore interface {
	DueInterrupts(ctx context.Context, now time.Time, limit int) ([]store.Interrupt, error)
	DueEscalations(ctx context.Context, now time.Time, limit int) ([]store.Escalation, error)
	ClaimEscalation(ctx context.Context, runID string, n int64, stage string, now time.Time) (bool, error)
}

// Resumer answers one pause of a paused run (Service.ResumePause).
type Resumer interface {
	ResumePause(ctx context.Context, runID, pauseID string, value *engine.ResumeValue, modified map[string]any) error
}

// SweeperOptions configure a Sweeper.
type SweeperOptions struct {
	Store SweepStore
	Runs  Resumer
	// Notify posts escalation webhooks; use builtin.GuardedClient so they
	// pass the http tool's address guard. Nil: escalations are not sent.
	Notify *http.Client
	Now    func() time.Time // default time.Now; tests move a fake clock
	Logger *slog.Logger
	Batch  int // interrupts handled per sweep and kind; default 100
}

// Sweeper applies the deadlines and sends the escalations of pending
// interrupts.
type Sweeper struct{ o SweeperOptions }

// NewSweeper returns a sweeper over opts.
func NewSweeper(o SweeperOptions) *Sweeper {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	return &Sweeper{o: o}
}

// SweepResult counts what one sweep did.
type SweepResult struct {
	TimedOut int // deadlines applied
	Lost     int // deadlines another answer (or process) got to first
	Notified int // escalation webhooks that answered 2xx
	Failed   int // escalation webhooks that could not be told
	Errors   int // deadlines that could not be applied (logged; tried again next sweep)
}

// maxWebhookReply bounds what is read of a webhook's reply.
const maxWebhookReply = 64 << 10

// Sweep handles what is due now, once.
func (w *Sweeper) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	now := w.o.Now()
	due, err := w.o.Store.DueInterrupts(ctx, now, w.o.Batch)
	if err != nil {
		return res, fmt.Errorf("sweep deadlines: %w", err)
	}
	for _, it := range due {
		v := &engine.ResumeValue{Action: engine.ActionTimeout, By: "deadline"}
		err := w.o.Runs.ResumePause(ctx, it.RunID, it.NodeID, v, nil) // node_id holds the pause id
		var ar *engine.AlreadyResumedError
		var busy *engine.ChainResumeError
		switch {
		case err == nil:
			res.TimedOut++
			w.o.Logger.Info("approval deadline passed; applied on_timeout", "run", it.RunID, "node", it.NodeID, "deadline", it.Deadline)
		case errors.As(err, &ar), errors.As(err, &busy):
			res.Lost++
		case errors.Is(err, ErrShutdown) || ctx.Err() != nil:
			return res, nil
		default: // one run's problem must not hold the others' deadlines up
			res.Errors++
			w.o.Logger.Error("could not apply an approval deadline", "run", it.RunID, "node", it.NodeID, "err", err)
		}
	}
	if w.o.Notify == nil {
		return res, nil
	}
	escs, err := w.o.Store.DueEscalations(ctx, now, w.o.Batch)
	if err != nil {
		return res, fmt.Errorf("sweep escalations: %w", err)
	}
	for _, e := range escs {
		won, err := w.o.Store.ClaimEscalation(ctx, e.RunID, e.N, e.Stage, now)
		if err != nil {
			return res, err
		}
		if !won {
			continue
		}
		if err := w.notify(ctx, e); err != nil {
			res.Failed++
			w.o.Logger.Warn("escalation webhook failed", "run", e.RunID, "node", e.NodeID, "stage", e.Stage, "url", redact.URL(e.URL), "err", err)
			continue
		}
		res.Notified++
	}
	return res, nil
}

// escalationBody is what an escalation webhook receives.
type escalationBody struct {
	Event        string     `json:"event"` // paused | deadline_near
	RunID        string     `json:"run_id"`
	NodeID       string     `json:"node_id"`
	ChainID      string     `json:"chain_id,omitempty"`
	ChainName    string     `json:"chain_name"`
	Prompt       any        `json:"prompt,omitempty"`
	WaitingSince time.Time  `json:"waiting_since"`
	Deadline     *time.Time `json:"deadline,omitempty"`
	AnswerPath   string     `json:"answer_path"`
}

func (w *Sweeper) notify(ctx context.Context, e store.Escalation) error {
	body := escalationBody{Event: e.Stage, RunID: e.RunID, NodeID: e.NodeID, ChainID: e.ChainID, ChainName: e.ChainName,
		Prompt: e.Prompt, WaitingSince: e.Since, AnswerPath: "/v1/runs/" + e.RunID + "/resume"}
	if !e.Deadline.IsZero() {
		body.Deadline = &e.Deadline
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "chainstudio-escalation")
	resp, err := w.o.Notify.Do(req)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL, credentials and all
		}
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxWebhookReply))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the webhook answered %s", resp.Status)
	}
	return nil
}

// Run sweeps every period until ctx ends.
func (w *Sweeper) Run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if _, err := w.Sweep(ctx); err != nil && ctx.Err() == nil {
			w.o.Logger.Error("approvals sweep", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
