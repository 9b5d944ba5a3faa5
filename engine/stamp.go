package engine

import "time"

// stamp is the time the engine records on events, node results and
// checkpoints: to the microsecond, the precision the stores keep for runs
// and chains, so every timestamp a client reads has one precision whether it
// came from a database column or from a checkpoint.
func stamp() time.Time { return time.Now().Truncate(time.Microsecond) }
