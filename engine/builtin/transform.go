package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/jmespath/go-jmespath"
)

// exprCacheLimit bounds the number of compiled expressions kept. Once full,
// further expressions are compiled on every call instead of cached.
const exprCacheLimit = 1024

var (
	exprCache     sync.Map // source → *jmespath.JMESPath
	exprCacheSize atomic.Int64
)

func compileExpr(src string) (*jmespath.JMESPath, error) {
	if c, ok := exprCache.Load(src); ok {
		return c.(*jmespath.JMESPath), nil
	}
	c, err := compileSafely(src)
	if err != nil {
		return nil, err
	}
	if exprCacheSize.Load() < exprCacheLimit {
		if _, loaded := exprCache.LoadOrStore(src, c); !loaded {
			exprCacheSize.Add(1)
		}
	}
	return c, nil
}

func compileSafely(src string) (c *jmespath.JMESPath, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("transform: expression %q could not be compiled: %v", src, r)
		}
	}()
	c, err = jmespath.Compile(src)
	if err == nil {
		return c, nil
	}
	var se jmespath.SyntaxError
	if errors.As(err, &se) {
		msg := strings.TrimPrefix(se.Error(), "SyntaxError: ")
		near := ""
		switch {
		case se.Offset >= len(src):
			near = " (the end of the expression)"
		case se.Offset >= 0:
			near = fmt.Sprintf(" (near %q)", src[se.Offset:])
		}
		return nil, fmt.Errorf("transform: syntax error in expression %q at offset %d%s: %s", src, se.Offset, near, msg)
	}
	return nil, fmt.Errorf("transform: expression %q could not be compiled: %v", src, err)
}

// transformTool evaluates the JMESPath `expression` over `data` (or the whole
// input without `expression`) under the expression budget, stopping when
// the node's context ends. go-jmespath checks the syntax.
func transformTool(ctx context.Context, in map[string]any, _ tool.Emitter) (out any, err error) {
	src, err := requireString("transform", in, "expression")
	if err != nil {
		return nil, err
	}
	if _, err := compileExpr(src); err != nil {
		return nil, err
	}
	res, err := expr.Search(ctx, src, dataOrInputWithout(in, "expression"))
	if err != nil {
		var ee *expr.EvalError
		if errors.As(err, &ee) {
			if ee.Err != nil {
				return nil, fmt.Errorf("transform: evaluating expression %q failed: %w", src, ee.Err)
			}
			return nil, fmt.Errorf("transform: evaluating expression %q failed: %s", src, ee.Msg)
		}
		return nil, err
	}
	return res, nil
}
