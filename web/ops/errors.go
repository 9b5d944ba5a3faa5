package ops

import (
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// ErrorFor is the API error a handler's error is answered with.
func (s *Env) ErrorFor(err error) *httpcore.APIError { return httpcore.ErrorFor(err, s.BodyLimit) }

// LogAPIError logs the errors a person cannot act on (internal errors, a
// full disk) with the request id.
func (s *Env) LogAPIError(c echo.Context, ae *httpcore.APIError, err error) {
	switch ae.Kind {
	case httpcore.ENOSPACE:
		s.Log.Error("database disk full", "path", c.Request().URL.Path, "err", err,
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
	case httpcore.EINTERNAL:
		s.Log.Error("unhandled error", "path", c.Request().URL.Path, "err", err,
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
	}
}
