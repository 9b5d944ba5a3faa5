// Package live is the studio's event streams: a run's events as the API's
// SSE frames (GET /v1/runs/{id}/events) and as the run page's rendered
// frames (GET /runs/{id}/events), each frame carrying what the page shows,
// and the budget every streaming response (these and the A2E door's)
// buffers within (StreamPool).
package live

import (
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/chainstudio/studio/web/ops"
)

// Streams serves the event streams of runs.
type Streams struct {
	*ops.Env
	streams   *StreamPool
	heartbeat time.Duration      // how often an idle stream sends a comment line
	finals    singleflight.Group // the final `run` event, read once per run and audience
}

// New returns the event streams over env, buffering within pool.
func New(env *ops.Env, pool *StreamPool, heartbeat time.Duration) *Streams {
	return &Streams{Env: env, streams: pool, heartbeat: heartbeat}
}
