package sqlstore

import (
	"sync"

	"github.com/chainstudio/studio/engine"
)

// Positions caches, for the runs this process appends checkpoints to, the
// number of each run's last entry: an append of such a run needs neither
// the check of its row nor the log's MAX(n). The zero value is empty.
type Positions struct{ m sync.Map } // run id → int64

// Of returns runID's cached position.
func (p *Positions) Of(runID string) (int64, bool) {
	v, ok := p.m.Load(runID)
	if !ok {
		return 0, false
	}
	return v.(int64), true
}

// Forget drops runID's position (a failed append, a run another process
// may write): the next append reads it from the database.
func (p *Positions) Forget(runID string) { p.m.Delete(runID) }

// Appended records that an append of cps committed with last as the run's
// last entry. A run that ended is forgotten: a resume reads its position
// again.
func (p *Positions) Appended(runID string, cps []engine.Checkpoint, last int64) {
	for i := range cps {
		if cps[i].Kind == engine.CheckpointEnd {
			p.m.Delete(runID)
			return
		}
	}
	p.m.Store(runID, last)
}
