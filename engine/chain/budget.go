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
