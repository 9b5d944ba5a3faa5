package ops

import (
	"errors"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

// PageNotFound maps a store "not found" to a 404 (an HTML page for
// browsers; a JSON error for the API and the streams).
func PageNotFound(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return httpcore.Error(httpcore.ENOTFOUND, "not_found", what+" not found", nil)
	}
	return err
}
