//go:build !unix

package builtin

import (
	"context"
	"errors"

	"github.com/chainstudio/studio/engine/tool"
)

// call refuses to run: process-group control is only implemented on Unix.
func (t *procTool) call(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	if _, err := t.check(in); err != nil {
		return nil, err
	}
	return nil, errors.New("proc: running programs is only supported on Unix-like systems")
}
