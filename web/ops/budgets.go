package ops

import (
	"fmt"

	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

// CheckDayBudget refuses (400, naming the field) a trigger's or
// credential's budget that is negative, or in cost while the studio has no
// price table to hold a cost to. nil b is no budget.
func CheckDayBudget(b *store.DayBudget, prices *pricing.Prices) error {
	if b == nil {
		return nil
	}
	bad := func(field, msg string) error {
		return httpcore.Error(httpcore.EBADREQUEST, "invalid_budget", field+" "+msg, map[string]any{"field": field})
	}
	switch {
	case b.Tokens < 0:
		return bad("budget.tokens", fmt.Sprintf("is %d; a budget is 0 (none) or more", b.Tokens))
	case b.Cost < 0:
		return bad("budget.cost", fmt.Sprintf("is %g; a budget is 0 (none) or more", b.Cost))
	case b.Cost > 0 && prices == nil:
		return bad("budget.cost", fmt.Sprintf("is %g, but this studio has no price table (--prices): a call's cost is its tokens at its model's price; set budget.tokens instead, or start the studio with --prices", b.Cost))
	}
	return nil
}
