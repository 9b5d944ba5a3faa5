package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// Limits on triggers.
const (
	maxTriggersPerChain = 20       // schedules, and hooks, per chain
	maxTriggerInput     = 64 << 10 // a schedule's input, encoded
	MaxHookBody         = 1 << 20  // a webhook call's body
	// A signature's timestamp may be hookTolerance old and hookSkew
	// ahead of the studio's clock (the sender's clock may run a little
	// fast); within that window each signature is accepted once (the
	// store remembers its digest until the timestamp is hookTolerance old).
	hookTolerance      = 5 * time.Minute
	hookSkew           = 30 * time.Second
	defaultSyncTimeout = 30 * time.Second
	maxSyncTimeout     = 120 * time.Second
	firingsShown       = 5 // last firings per trigger in the list
	// HookSignatureHeader carries a webhook call's signature:
	// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>".
	HookSignatureHeader = "X-Studio-Signature"
)

type firingJSON struct {
	Tick    time.Time `json:"tick,omitzero"`
	RunID   string    `json:"run_id,omitempty"`
	Outcome string    `json:"outcome"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

type scheduleJSON struct {
	ID       string           `json:"id"`
	ChainID  string           `json:"chain_id"`
	Cron     string           `json:"cron"`
	TimeZone string           `json:"time_zone"`
	Input    map[string]any   `json:"input"`
	Overlap  string           `json:"overlap"`
	CatchUp  string           `json:"catch_up"`
	Enabled  bool             `json:"enabled"`
	Budget   *store.DayBudget `json:"budget,omitempty"`
	Created  time.Time        `json:"created"`
	Updated  time.Time        `json:"updated"`
	LastTick time.Time        `json:"last_tick,omitzero"`
	NextTick time.Time        `json:"next_tick,omitzero"`
	Firings  []firingJSON     `json:"firings"`
}

type hookJSON struct {
	ID            string           `json:"id"`
	ChainID       string           `json:"chain_id"`
	Path          string           `json:"path"`
	Sync          bool             `json:"sync"`
	SyncTimeoutMS int64            `json:"sync_timeout_ms,omitempty"`
	Budget        *store.DayBudget `json:"budget,omitempty"`
	Created       time.Time        `json:"created"`
	LastFired     time.Time        `json:"last_fired,omitzero"`
	Secret        string           `json:"secret,omitempty"` // in the create answer only
	Firings       []firingJSON     `json:"firings"`
}

func (s *Triggers) firings(ctx context.Context, id string) ([]firingJSON, error) {
	fs, err := s.DB.ListFirings(ctx, id, firingsShown)
	if err != nil {
		return nil, err
	}
	out := make([]firingJSON, len(fs))
	for i, f := range fs {
		out[i] = firingJSON{Tick: f.Tick, RunID: f.RunID, Outcome: f.Outcome, Message: f.Message, At: f.Created}
	}
	return out, nil
}

func (s *Triggers) scheduleView(ctx context.Context, sc *store.Schedule) (scheduleJSON, error) {
	v := scheduleJSON{ID: sc.ID, ChainID: sc.ChainID, Cron: sc.Cron, TimeZone: sc.TimeZone, Input: sc.Input, Overlap: sc.Overlap,
		CatchUp: sc.CatchUp, Enabled: sc.Enabled, Created: sc.Created, Updated: sc.Updated, LastTick: sc.LastTick}
	v.Budget = budgetJSON(sc.Budget)
	if spec, err := runs.ParseCron(sc.Cron, sc.TimeZone); err == nil && sc.Enabled {
		v.NextTick = spec.Next(time.Now())
	}
	var err error
	v.Firings, err = s.firings(ctx, sc.ID)
	return v, err
}

func (s *Triggers) hookView(ctx context.Context, h *store.Hook) (hookJSON, error) {
	v := hookJSON{ID: h.ID, ChainID: h.ChainID, Path: "/v1/hooks/" + h.ID, Sync: h.Sync, Created: h.Created, LastFired: h.LastFired}
	v.Budget = budgetJSON(h.Budget)
	if h.Sync {
		v.SyncTimeoutMS = h.SyncTimeout.Milliseconds()
	}
	var err error
	v.Firings, err = s.firings(ctx, h.ID)
	return v, err
}

// budgetJSON is a trigger's budget as the API shows it (nil: none).
func budgetJSON(b store.DayBudget) *store.DayBudget {
	if b.IsZero() {
		return nil
	}
	return &b
}

// GET /v1/chains/{id}/triggers
func (s *Triggers) ListTriggers(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.DB.GetChain(ctx, c.Param("id"))
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	ss, err := s.DB.ListSchedules(ctx, ch.ID)
	if err != nil {
		return err
	}
	hs, err := s.DB.ListHooks(ctx, ch.ID)
	if err != nil {
		return err
	}
	out := struct {
		Schedules []scheduleJSON `json:"schedules"`
		Hooks     []hookJSON     `json:"hooks"`
	}{Schedules: []scheduleJSON{}, Hooks: []hookJSON{}}
	for i := range ss {
		v, err := s.scheduleView(ctx, &ss[i])
		if err != nil {
			return err
		}
		out.Schedules = append(out.Schedules, v)
	}
	for i := range hs {
		v, err := s.hookView(ctx, &hs[i])
		if err != nil {
			return err
		}
		out.Hooks = append(out.Hooks, v)
	}
	return c.JSON(http.StatusOK, out)
}

// scheduleBody is what POST and PUT take; absent fields take defaults.
type scheduleBody struct {
	Cron     string         `json:"cron"`
	TimeZone string         `json:"time_zone"`
	Input    map[string]any `json:"input"`
	Overlap  string         `json:"overlap"`
	CatchUp  string         `json:"catch_up"`
	Enabled  *bool          `json:"enabled"`
	// Budget holds the runs it starts to a day's model spending.
	Budget *store.DayBudget `json:"budget"`
}

// schedule checks the body and fills the record's fields.
func (b *scheduleBody) schedule(sc *store.Schedule) error {
	if _, err := runs.ParseCron(b.Cron, b.TimeZone); err != nil {
		var ce *runs.CronError
		if errors.As(err, &ce) {
			code, details := "invalid_cron", map[string]any{"field": ce.Field}
			if ce.Field == "time_zone" {
				code, details["time_zone"] = "invalid_time_zone", b.TimeZone
			} else {
				details["position"] = ce.Position
			}
			return httpcore.Error(httpcore.EINVALID, code, ce.Error(), details)
		}
		return err
	}
	if b.Overlap == "" {
		b.Overlap = store.OverlapSkip
	}
	if b.CatchUp == "" {
		b.CatchUp = store.CatchUpSkip
	}
	switch b.Overlap {
	case store.OverlapSkip, store.OverlapQueue, store.OverlapAllow:
	default:
		return httpcore.Error(httpcore.EINVALID, "invalid_overlap", fmt.Sprintf("overlap must be skip, queue or allow, got %q", b.Overlap), map[string]any{"field": "overlap"})
	}
	switch b.CatchUp {
	case store.CatchUpSkip, store.CatchUpOnce:
	default:
		return httpcore.Error(httpcore.EINVALID, "invalid_catch_up", fmt.Sprintf("catch_up must be skip or once, got %q", b.CatchUp), map[string]any{"field": "catch_up"})
	}
	if b.Input == nil {
		b.Input = map[string]any{}
	}
	if enc, _ := json.Marshal(b.Input); len(enc) > maxTriggerInput {
		return httpcore.Error(httpcore.ETOOLARGE, "too_large", fmt.Sprintf("the schedule's input is %d bytes encoded, more than %d", len(enc), maxTriggerInput), map[string]any{"field": "input"})
	}
	sc.Cron, sc.TimeZone, sc.Input, sc.Overlap, sc.CatchUp = strings.TrimSpace(b.Cron), b.TimeZone, b.Input, b.Overlap, b.CatchUp
	sc.Enabled = b.Enabled == nil || *b.Enabled
	if b.Budget != nil {
		sc.Budget = *b.Budget
	}
	return nil
}

func (s *Triggers) wakeScheduler() {
	if s.Scheduler != nil {
		s.Scheduler.Wake()
	}
}

// triggerableChain is the chain a new trigger (what: "a schedule") is added
// to. A chain never published has nothing for a trigger to run: the trigger
// is refused with "publish first" rather than firing runs of a blank or
// unfinished draft.
func (s *Triggers) triggerableChain(ctx context.Context, id, what string) (*store.Chain, error) {
	ch, err := s.DB.GetChain(ctx, id)
	if err != nil {
		return nil, httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
	}
	if ch.Published.Version == 0 {
		return nil, httpcore.Error(httpcore.ECONFLICT, "not_published",
			fmt.Sprintf("chain %q has never been published: publish it first (Publish… in the designer, or POST /v1/chains/%s/publish); %s runs the published version", ch.Name, ch.ID, what),
			map[string]any{"chain_id": ch.ID})
	}
	return ch, nil
}

// POST /v1/chains/{id}/schedules
func (s *Triggers) CreateSchedule(c echo.Context) error {
	var body scheduleBody
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	ch, err := s.triggerableChain(ctx, c.Param("id"), "a schedule")
	if err != nil {
		return err
	}
	sc := store.Schedule{ID: uuid.NewString(), ChainID: ch.ID}
	if err := body.schedule(&sc); err != nil {
		return err
	}
	if err := ops.CheckDayBudget(body.Budget, s.Prices); err != nil {
		return err
	}
	if have, err := s.DB.ListSchedules(ctx, ch.ID); err != nil {
		return err
	} else if len(have) >= maxTriggersPerChain {
		return httpcore.Error(httpcore.EINVALID, "too_many_triggers", fmt.Sprintf("chain %q has %d schedules already, the most it may have", ch.Name, len(have)), nil)
	}
	saved, err := s.DB.CreateSchedule(ctx, sc)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", ch.ID))
	}
	s.wakeScheduler()
	v, err := s.scheduleView(ctx, saved)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, v)
}

// PUT /v1/chains/{id}/schedules/{sid}
func (s *Triggers) UpdateSchedule(c echo.Context) error {
	var body scheduleBody
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	sc := store.Schedule{ID: c.Param("sid"), ChainID: c.Param("id")}
	if err := body.schedule(&sc); err != nil {
		return err
	}
	if err := ops.CheckDayBudget(body.Budget, s.Prices); err != nil {
		return err
	}
	ctx := c.Request().Context()
	saved, err := s.DB.UpdateSchedule(ctx, sc)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("schedule %q of chain %q", sc.ID, sc.ChainID))
	}
	s.wakeScheduler()
	v, err := s.scheduleView(ctx, saved)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// DELETE /v1/chains/{id}/schedules/{sid}
func (s *Triggers) DeleteSchedule(c echo.Context) error {
	if err := s.DB.DeleteSchedule(c.Request().Context(), c.Param("id"), c.Param("sid")); err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("schedule %q of chain %q", c.Param("sid"), c.Param("id")))
	}
	s.wakeScheduler()
	return c.NoContent(http.StatusNoContent)
}

// POST /v1/chains/{id}/hooks {sync, sync_timeout_ms}: the answer carries
// the hook's secret, the only time it is shown.
func (s *Triggers) CreateHook(c echo.Context) error {
	var body struct {
		Sync          bool             `json:"sync"`
		SyncTimeoutMS int64            `json:"sync_timeout_ms"`
		Budget        *store.DayBudget `json:"budget"`
	}
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	if err := ops.CheckDayBudget(body.Budget, s.Prices); err != nil {
		return err
	}
	timeout := defaultSyncTimeout
	if body.SyncTimeoutMS != 0 {
		timeout = time.Duration(body.SyncTimeoutMS) * time.Millisecond
		if timeout < 100*time.Millisecond || timeout > maxSyncTimeout {
			return httpcore.Error(httpcore.EINVALID, "invalid_sync_timeout", fmt.Sprintf("sync_timeout_ms must be between 100 and %d, got %d", maxSyncTimeout.Milliseconds(), body.SyncTimeoutMS),
				map[string]any{"field": "sync_timeout_ms"})
		}
	}
	ctx := c.Request().Context()
	ch, err := s.triggerableChain(ctx, c.Param("id"), "a webhook")
	if err != nil {
		return err
	}
	if have, err := s.DB.ListHooks(ctx, ch.ID); err != nil {
		return err
	} else if len(have) >= maxTriggersPerChain {
		return httpcore.Error(httpcore.EINVALID, "too_many_triggers", fmt.Sprintf("chain %q has %d hooks already, the most it may have", ch.Name, len(have)), nil)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("hook secret: %w", err)
	}
	hook := store.Hook{ID: uuid.NewString(), ChainID: ch.ID, Secret: hex.EncodeToString(key), Sync: body.Sync, SyncTimeout: timeout}
	if body.Budget != nil {
		hook.Budget = *body.Budget
	}
	h, err := s.DB.CreateHook(ctx, hook)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", ch.ID))
	}
	v, err := s.hookView(ctx, h)
	if err != nil {
		return err
	}
	v.Secret = h.Secret
	return c.JSON(http.StatusCreated, v)
}

// DELETE /v1/chains/{id}/hooks/{hid}
func (s *Triggers) DeleteHook(c echo.Context) error {
	if err := s.DB.DeleteHook(c.Request().Context(), c.Param("id"), c.Param("hid")); err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("hook %q of chain %q", c.Param("hid"), c.Param("id")))
	}
	return c.NoContent(http.StatusNoContent)
}

// POST /v1/chains/{id}/hooks/{hid}/test {"input"?}: "Send test event". The
// hook fires as a signed call would, with input (default: the published
// version's sample_input, else {}), so the run is one a sender would start:
// the published version, started by this webhook. The caller is a signed-in
// editor, so no signature is asked for and none is spent.
func (s *Triggers) TestHook(c echo.Context) error {
	var body struct {
		Input map[string]any `json:"input"`
	}
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	h, err := s.DB.GetHook(ctx, c.Param("hid"))
	if err != nil || h.ChainID != c.Param("id") {
		return httpcore.StoreErr(store.ErrNotFound, fmt.Sprintf("hook %q of chain %q", c.Param("hid"), c.Param("id")))
	}
	ch, err := s.DB.GetPublishedChain(ctx, h.ChainID)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", h.ChainID))
	}
	input := body.Input
	if input == nil && ch.Doc != nil {
		input = ch.Doc.SampleInput
	}
	if input == nil {
		input = map[string]any{}
	}
	id, err := s.Runs.StartTriggered(ctx, ch, input, runs.Trigger{Kind: store.TriggerWebhook, ID: h.ID})
	if err != nil {
		return err
	}
	runLocation(c, id)
	return c.JSON(http.StatusAccepted, map[string]any{"run_id": id, "status": s.StartedStatus(id), "chain_id": ch.ID, "chain_version": ch.Version})
}

// SignHook returns the X-Studio-Signature value of a webhook call: what a
// sender computes (and what the tests send).
func SignHook(secret string, at time.Time, body []byte) string {
	t := strconv.FormatInt(at.Unix(), 10)
	return "t=" + t + ",v1=" + hookMAC(secret, t, body)
}

func hookMAC(secret, t string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(t))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// verifyHook checks a call's signature header against the hook's secret:
// well formed, signed at most hookTolerance ago and at most hookSkew
// ahead, and one of its v1 values the HMAC of "t.body" (compared in
// constant time). It returns when the call was signed and the v1 value that
// matched, which callHook records so that the call is accepted once.
func verifyHook(secret, header string, body []byte, now time.Time) (time.Time, string, *httpcore.APIError) {
	bad := func(code, msg string) (time.Time, string, *httpcore.APIError) {
		return time.Time{}, "", httpcore.Error(httpcore.EUNAUTHORIZED, code, msg, nil)
	}
	if header == "" {
		return bad("missing_signature", "the call is not signed: send "+HookSignatureHeader+": t=<unix seconds>,v1=<hex HMAC-SHA256 of \"t.body\" with the hook's secret>")
	}
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return bad("bad_signature", "malformed "+HookSignatureHeader+": want t=<unix seconds>,v1=<hex HMAC-SHA256>")
	}
	at := time.Unix(sec, 0)
	if d := now.Sub(at); d > hookTolerance {
		return bad("stale_signature", fmt.Sprintf("the signature's timestamp is %s old, more than %s: sign each call when it is sent", d.Round(time.Second), hookTolerance))
	} else if -d > hookSkew {
		return bad("stale_signature", fmt.Sprintf("the signature's timestamp is %s ahead of the studio's clock, more than %s: check the sender's clock", (-d).Round(time.Second), hookSkew))
	}
	want := []byte(hookMAC(secret, ts, body))
	for _, sig := range sigs {
		if hmac.Equal([]byte(sig), want) {
			return at, string(want), nil
		}
	}
	return bad("bad_signature", "the signature does not match the body and the hook's secret")
}

// useSignature records the call's signature in the store, so that a replay
// of it (in this process or another on the same database) is refused with
// 409 signature_replayed until its timestamp is too old to be accepted.
func (s *Triggers) useSignature(ctx context.Context, hookID, mac string, signedAt time.Time) error {
	d := sha256.Sum256([]byte(hookID + "." + mac))
	return s.DB.UseHookSignature(ctx, hookID, d[:], time.Now(), signedAt.Add(hookTolerance))
}

// POST /v1/hooks/{hook_id}: authenticated by its signature, not the studio
// token (publicPath). A bad signature is 401 and starts nothing, a
// signature used before is 409; a body that is not a JSON object is 400.
// The object is the run's input. Refusals are logged once, then summarised
// (hookLog), so a flood of bad calls cannot flood the log.
func (s *Triggers) CallHook(c echo.Context) error {
	req := c.Request()
	req.Body = http.MaxBytesReader(c.Response(), req.Body, MaxHookBody)
	body, err := io.ReadAll(req.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return httpcore.Error(httpcore.ETOOLARGE, "too_large", fmt.Sprintf("a webhook body may have at most %d bytes", MaxHookBody), nil)
		}
		return httpcore.Error(httpcore.EBADREQUEST, "bad_body", "could not read the request body: "+err.Error(), nil)
	}
	ctx := req.Context()
	h, err := s.DB.GetHook(ctx, c.Param("hook_id"))
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("hook %q", c.Param("hook_id")))
	}
	signedAt, mac, bad := verifyHook(h.Secret, req.Header.Get(HookSignatureHeader), body, time.Now())
	if bad != nil {
		s.hookLog.Warn(bad.Code, "hook_id", h.ID, "err", bad, "request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		return bad
	}
	input, err := hookInput(body)
	if err != nil {
		return err
	}
	// The published version: an edit in progress never runs from a hook.
	ch, err := s.DB.GetPublishedChain(ctx, h.ChainID)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", h.ChainID))
	}
	// Refused before the signature is spent (the start checks again).
	if err := s.Runs.CheckRun(ctx, ch); err != nil {
		return err
	}
	// Last before the start: a call refused above may be sent again with
	// its signature; from here on the signature is spent.
	if err := s.useSignature(ctx, h.ID, mac, signedAt); errors.Is(err, store.ErrSignatureUsed) {
		s.hookLog.Warn("signature_replayed", "hook_id", h.ID, "request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		return httpcore.Error(httpcore.ECONFLICT, "signature_replayed",
			"this signature was accepted before: each call is accepted once, so sign every call (a retry too) when it is sent", nil)
	} else if err != nil {
		return err
	}
	id, err := s.Runs.StartTriggered(ctx, ch, input, runs.Trigger{Kind: store.TriggerWebhook, ID: h.ID})
	if err != nil {
		return err
	}
	runLocation(c, id)
	if h.Sync {
		if r := s.waitRun(ctx, id, h.SyncTimeout); r != nil {
			out := map[string]any{"run_id": id, "status": r.Status, "final_output": r.FinalOutput}
			if r.Error != nil {
				out["error"] = r.Error
			}
			return c.JSON(http.StatusOK, out)
		}
	}
	return c.JSON(http.StatusAccepted, map[string]any{"run_id": id, "status": s.StartedStatus(id), "chain_id": ch.ID, "chain_version": ch.Version})
}

// hookInput decodes a webhook body: a JSON object (an empty body is {}).
func hookInput(body []byte) (map[string]any, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return map[string]any{}, nil
	}
	if trimmed[0] != '{' {
		return nil, httpcore.Error(httpcore.EBADREQUEST, "not_an_object", "the webhook body must be a JSON object: it becomes the run's input", nil)
	}
	var input map[string]any
	if err := httpcore.BindJSONBytes(trimmed, &input); err != nil {
		return nil, err
	}
	if input == nil {
		input = map[string]any{}
	}
	return input, nil
}

// waitRun waits up to timeout for a run to stop (finish or pause) and
// returns it; nil when it still runs, or the caller left.
func (s *Triggers) waitRun(ctx context.Context, id string, timeout time.Duration) *store.Run {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wait := 20 * time.Millisecond
	for {
		if r, err := s.DB.GetRun(ctx, id); err == nil && r.Status.Terminal() && !s.Runs.Active(id) {
			return r
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}
