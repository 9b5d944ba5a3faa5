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
// input without `expression`).
func transformTool(_ context.Context, in map[string]any, _ tool.Emitter) (out any, err error) {
	src, err := requireString("transform", in, "expression")
	if err != nil {
		return nil, err
	}
	c, err := compileExpr(src)
	if err != nil {
		return nil, err
	}
	data := dataOrInputWithout(in, "expression")
	searched := data
	if strings.Contains(src, "sort_by") {
		// go-jmespath sorts sort_by's argument in place; data holds other
		// nodes' outputs.
		searched = expr.CloneJSON(data)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("transform: evaluating expression %q failed: %s", src, expr.ExplainJMESPathError(src, data, r))
		}
	}()
	res, err := c.Search(searched)
	if err != nil {
		return nil, fmt.Errorf("transform: evaluating expression %q failed: %s", src, expr.ExplainJMESPathError(src, data, err))
	}
	return res, nil
}
