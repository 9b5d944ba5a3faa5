package chain

// The per-run budgets, as named in RunError details ("budget") and by the
// server's flags.
const (
	BudgetNodeExecutions = "node_executions"
	BudgetOutputBytes    = "output_bytes"
	BudgetStoredBytes    = "stored_bytes"
	BudgetMapItems       = "map_items"
)

// BudgetFlags are the flags of `studio serve` and `studio run` that set each
// budget and ceiling, named in messages so that an operator knows what to
// raise.
var BudgetFlags = map[string]string{
	BudgetNodeExecutions: "--max-node-executions",
	BudgetOutputBytes:    "--max-output-bytes",
	BudgetStoredBytes:    "--max-stored-bytes",
	BudgetMapItems:       "--max-map-items",
	"timeout":            "--max-chain-timeout",
	"max_iterations":     "--max-iterations",
	"max_depth":          "--max-depth",
}

// ModelBudget is a chain's model spending budgets: Run over each of its
// runs, Day over all its runs in a UTC day (one account per chain name).
// The studio's own budgets (its flags) hold too: the smaller wins.
type ModelBudget struct {
	Run *BudgetLimit `json:"run,omitempty"`
	Day *BudgetLimit `json:"day,omitempty"`
}

// BudgetLimit is a budget's size: model tokens (input and output) and
// cost in the price table's currency; zero or absent is no limit on it.
type BudgetLimit struct {
	Tokens int64   `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
}

// Limit returns l's fields (zero for a nil l).
func (l *BudgetLimit) Limit() (tokens int64, cost float64) {
	if l == nil {
		return 0, 0
	}
	return l.Tokens, l.Cost
}

// budgetField is one field of a chain's budget, as issues name it.
type budgetField struct {
	path  string
	value float64
	cost  bool
}

// fields are the budget's fields that are set.
func (b *ModelBudget) fields() []budgetField {
	if b == nil {
		return nil
	}
	var out []budgetField
	for _, p := range []struct {
		name string
		l    *BudgetLimit
	}{{"run", b.Run}, {"day", b.Day}} {
		if p.l != nil {
			out = append(out, budgetField{"budget." + p.name + ".tokens", float64(p.l.Tokens), false},
				budgetField{"budget." + p.name + ".cost", p.l.Cost, true})
		}
	}
	return out
}
