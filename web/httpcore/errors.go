package httpcore

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/edit"
	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// Error codes. The domain codes are the store's (one vocabulary for every
// layer); the request codes describe what is wrong with an HTTP request
// itself, which no layer below the API can know.
const (
	ENOTFOUND    = store.ENOTFOUND
	ECONFLICT    = store.ECONFLICT
	EINVALID     = store.EINVALID // well formed, but breaks a rule
	ETOOLARGE    = store.ETOOLARGE
	EUNAVAILABLE = store.EUNAVAILABLE
	EINTERNAL    = store.EINTERNAL
	ELEASELOST   = store.ELEASELOST // a run's write from a process that lost the run to another (not expected over HTTP)

	EBADREQUEST   = "bad_request"  // the request cannot be read: bad JSON, a bad parameter
	EUNAUTHORIZED = "unauthorized" // no valid token
	EFORBIDDEN    = "forbidden"    // refused whoever asks (a cross-site write)
	ENOTALLOWED   = "not_allowed"  // the route does not take this method
	EPRECONDITION = "precondition" // a required If-Match is missing
	ESTALE        = "stale"        // If-Match names a version that is no longer current
	EMEDIATYPE    = "media_type"   // the body says it is not JSON
	EMISDIRECTED  = "misdirected"  // the Host header names another site (DNS rebinding)
	ETOOMANY      = "too_many"     // too many failed attempts from one client; retry later
	ENOSPACE      = "no_space"     // the database's disk is full
	EUPSTREAM     = "upstream"     // a server the studio asked on the caller's behalf failed (a model server)
)

// errorStatus is the one table from error codes to HTTP statuses.
var errorStatus = map[string]int{
	EBADREQUEST:   http.StatusBadRequest,
	EUNAUTHORIZED: http.StatusUnauthorized,
	EFORBIDDEN:    http.StatusForbidden,
	ENOTFOUND:     http.StatusNotFound,
	ENOTALLOWED:   http.StatusMethodNotAllowed,
	ECONFLICT:     http.StatusConflict,
	ELEASELOST:    http.StatusConflict,
	ETOOLARGE:     http.StatusRequestEntityTooLarge,
	EINVALID:      http.StatusUnprocessableEntity,
	EMISDIRECTED:  http.StatusMisdirectedRequest,
	EPRECONDITION: http.StatusPreconditionRequired,
	ESTALE:        http.StatusPreconditionFailed,
	EMEDIATYPE:    http.StatusUnsupportedMediaType,
	ETOOMANY:      http.StatusTooManyRequests,
	EINTERNAL:     http.StatusInternalServerError,
	EUNAVAILABLE:  http.StatusServiceUnavailable,
	ENOSPACE:      http.StatusInsufficientStorage,
	EUPSTREAM:     http.StatusBadGateway,
}

// ErrorStatusCode returns the HTTP status for an error code; unknown codes
// are internal errors.
func ErrorStatusCode(code string) int {
	if s, ok := errorStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// CodeForStatus is the table read backwards, for errors that arrive with a
// status only (echo's own: unknown route, wrong method, body too large; an
// SDK's refusal).
func CodeForStatus(status int) string {
	for code, s := range errorStatus {
		if s == status && code != ELEASELOST { // 409 reads as conflict
			return code
		}
	}
	if status < 500 {
		return EBADREQUEST
	}
	return EINTERNAL
}

// APIError is the JSON error every API route answers with:
// {"error": {"code", "message", "details"}}. Kind is the error code that
// picks the HTTP status; Code is the precise reason clients branch on
// ("bad_json", "unknown_node", "version_conflict" …).
type APIError struct {
	Kind    string `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter time.Duration `json:"-"`
}

func (e *APIError) Error() string { return e.Message }

// Status is the HTTP status the error is answered with.
func (e *APIError) Status() int { return ErrorStatusCode(e.Kind) }

// Error returns an error of kind kind with the reason code.
func Error(kind, code, msg string, details any) *APIError {
	return &APIError{Kind: kind, Code: code, Message: msg, Details: details}
}

// DomainError maps the errors the layers below return (store, engine, run
// service) to API errors, in this one place. It returns nil for an error it
// does not know, which is then an internal error.
func DomainError(err error) *APIError {
	var (
		ae   *APIError
		ce   *store.ConflictError
		ve   *store.VersionConflictError
		se   *store.Error
		re   *engine.ChainResumeError
		ar   *engine.AlreadyResumedError
		cp   *engine.ChainCheckpointError
		un   *inspect.UnknownNodeError
		busy *runs.BusyError
		nre  *engine.NodeRunError
		xe   *edit.ExtractError
		ans  *engine.AnswerError
		inv  *runs.InvalidChainError
		rule *engine.AnswerRuleError
		np   *store.NotPublishedError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ce):
		details := map[string]any{"name": ce.Name}
		if ce.ChainID != "" {
			details["chain_id"] = ce.ChainID
		}
		return Error(ECONFLICT, "name_taken", fmt.Sprintf("a chain named %q already exists; chain names are unique", ce.Name), details)
	case errors.As(err, &ve):
		return Error(ECONFLICT, "version_conflict",
			fmt.Sprintf("the chain was changed since version %d: it is at version %d; reload it and apply your edit again", ve.Base, ve.Current),
			map[string]any{"current_version": ve.Current, "base_version": ve.Base})
	case errors.As(err, &np):
		return Error(ECONFLICT, "not_published", np.Error(), map[string]any{"chain_id": np.ChainID})
	case errors.Is(err, store.ErrNotFound):
		return Error(ENOTFOUND, "not_found", err.Error(), nil)
	case errors.Is(err, store.ErrInvalid):
		return Error(EINVALID, "invalid", err.Error(), nil)
	case errors.As(err, &nre):
		kind := EINVALID
		if nre.Reason == engine.NodeRunUnknownNode {
			kind = ENOTFOUND
		}
		details := map[string]any{"node_id": nre.NodeID}
		if len(nre.Needs) > 0 {
			details["needs"] = nre.Needs
		}
		if nre.FromRun != "" {
			details["from_run"] = nre.FromRun
		}
		return Error(kind, nre.Code(), nre.Error(), details)
	case errors.As(err, &xe):
		return Error(EINVALID, "extract_refused", xe.Error(),
			map[string]any{"node_id": xe.NodeID, "edge_id": xe.EdgeID, "field": xe.Field})
	case errors.As(err, &inv):
		return Error(EINVALID, chain.CodeInvalid, inv.Error()+" (a chain with errors can be saved but not run)",
			map[string]any{"issues": inv.Issues})
	case errors.As(err, &rule):
		return Error(EINVALID, rule.Code(), rule.Msg, map[string]any{"field": rule.Field})
	case errors.As(err, &ans):
		details := map[string]any{"node_id": ans.NodeID}
		if ans.Field != "" {
			details["field"] = ans.Field
		}
		return Error(EINVALID, engine.CodeInvalidAnswer, ans.Error(), details)
	case errors.As(err, &re): // before ChainCheckpointError: a resume error is one too
		return Error(EINVALID, engine.CodeResume, re.Error(), nil)
	case errors.As(err, &ar):
		return Error(ECONFLICT, engine.CodeAlreadyResumed, ar.Error(), nil)
	case errors.As(err, &cp):
		return Error(ENOTFOUND, engine.CodeCheckpoint, cp.Error(), nil)
	case errors.As(err, &un):
		return Error(ENOTFOUND, "unknown_node", un.Error(), map[string]any{"run_id": un.RunID, "node_id": un.NodeID})
	case errors.As(err, &busy):
		kind := EUNAVAILABLE
		if busy.Code == "queue_full" {
			kind = ETOOMANY
		}
		ae := Error(kind, busy.Code, busy.Message, map[string]any{"retry_after": int(busy.RetryAfter.Seconds())})
		ae.RetryAfter = busy.RetryAfter
		return ae
	case errors.Is(err, runs.ErrShutdown):
		return Error(EUNAVAILABLE, "shutting_down", runs.ErrShutdown.Error(), nil)
	case errors.As(err, &se):
		return Error(se.Code, se.Code, store.ErrorMessage(err), nil)
	case DiskFull(err):
		return Error(ENOSPACE, "insufficient_storage",
			"the database disk is full: nothing was saved; free space on the studio's disk and retry", nil)
	}
	return nil
}

// StoreErr is DomainError with the thing looked up named in a not-found
// message ("chain \"x\" not found"); unknown errors pass through.
func StoreErr(err error, what string) error {
	if store.ErrorCode(err) == ENOTFOUND {
		return Error(ENOTFOUND, "not_found", what+" not found", nil)
	}
	if ae := DomainError(err); ae != nil {
		return ae
	}
	return err
}

// ErrorFor is the API error a handler's error is answered with; bodyLimit
// is the request body limit an over-limit body's message names.
func ErrorFor(err error, bodyLimit int64) *APIError {
	if ae := DomainError(err); ae != nil {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code := strings.ToLower(strings.ReplaceAll(http.StatusText(he.Code), " ", "_"))
		msg := fmt.Sprint(he.Message)
		if he.Code == http.StatusRequestEntityTooLarge {
			msg = fmt.Sprintf("request body is over the %d-byte limit", bodyLimit)
		}
		return Error(CodeForStatus(he.Code), code, msg, nil)
	}
	return Error(EINTERNAL, "internal", "internal error (logged with the request id)", nil)
}

// DiskFull reports whether err is SQLite's SQLITE_FULL (the disk holding the
// database, its WAL or its temporary files is full).
func DiskFull(err error) bool {
	var c interface{ Code() int }
	if errors.As(err, &c) && c.Code()&0xff == 13 {
		return true
	}
	return strings.Contains(err.Error(), "database or disk is full")
}
