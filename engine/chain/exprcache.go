package chain

import (
	"sync"

	"github.com/chainstudio/studio/engine/expr"
)

// exprCache keeps parsed expressions by source. The designer validates the
// whole chain on every edit, and almost every expression is unchanged from
// the last edit; parsed expressions are immutable and safe to share.
var exprCache = struct {
	sync.Mutex
	m     map[string]*expr.Expr
	bytes int
}{m: map[string]*expr.Expr{}}

// Bounds on what the cache holds: entries and total source bytes.
const (
	exprCacheMax      = 1 << 16
	exprCacheMaxBytes = 16 << 20
)

// resetExprCache empties the cache (benchmarks measure cold validation).
func resetExprCache() {
	exprCache.Lock()
	clear(exprCache.m)
	exprCache.bytes = 0
	exprCache.Unlock()
}

// parseExpr parses src, reusing an earlier parse of the same source. Errors
// are not cached (they are cheap to find again and carry the position).
func parseExpr(src string) (*expr.Expr, error) {
	exprCache.Lock()
	e, ok := exprCache.m[src]
	exprCache.Unlock()
	if ok {
		return e, nil
	}
	e, err := expr.Parse(src)
	if err != nil {
		return nil, err
	}
	exprCache.Lock()
	if len(exprCache.m) >= exprCacheMax || exprCache.bytes+len(src) > exprCacheMaxBytes {
		clear(exprCache.m) // crude but bounded; a full cache is rebuilt by the next validation
		exprCache.bytes = 0
	}
	exprCache.m[src] = e
	exprCache.bytes += len(src)
	exprCache.Unlock()
	return e, nil
}
