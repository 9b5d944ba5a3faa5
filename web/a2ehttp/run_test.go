package a2ehttp

import (
	"net/http/httptest"
	"testing"

	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// Every refusal of the A2E door is a chain/resp answering the message the
// request carried, with the API error's code, message and details.
func TestErrorResponseAnswersTheMessage(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/v1/a2e", "/v1/a2e/send", "/v1/a2e/stream"} {
		if !IsPath(p) {
			t.Errorf("%s is not the A2E door's", p)
		}
	}
	if IsPath("/v1/a2ex") || IsPath("/v1/chains") {
		t.Error("a path outside /v1/a2e is the A2E door's")
	}
	c := echo.New().NewContext(httptest.NewRequest("POST", "/v1/a2e/send", nil), httptest.NewRecorder())
	noteEnvelope(c, []byte(`{"type":"chain/req","id":"m1","chain_id":"c1"}`))
	ae := httpcore.Error(httpcore.EUNAVAILABLE, "stream_not_read", "read the stream", map[string]any{"held_bytes": 3})
	resp := ErrorResponse(c, ae)
	if resp.Type != a2e.TypeResponse || resp.ReqID != "m1" || resp.ChainID != "c1" || resp.Success ||
		resp.Error == nil || resp.Error.Code != "stream_not_read" || resp.Error.Message != "read the stream" || resp.Error.Details["held_bytes"] != 3 {
		t.Fatalf("refusal %+v (error %+v)", resp, resp.Error)
	}
	if d := ErrorResponse(c, httpcore.Error(httpcore.EBADREQUEST, "x", "y", []string{"a"})).Error.Details; d["details"] == nil {
		t.Errorf("details that are not an object: %v", d)
	}
}
