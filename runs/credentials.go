package runs

import (
	"context"
	"fmt"

	"github.com/chainstudio/studio/engine/tool"
)

// Credentials gives the resolver for the runs of one saved chain (chainID ""
// for a chain that is not saved: an A2E request, an agent's chain).
type Credentials interface {
	ForChain(chainID string) tool.Credentials
}

// runCredentials resolves credentials for one run: the chain the run
// belongs to decides which it may use. The run's record is read at the first
// use, so that a run without credentials costs nothing.
type runCredentials struct {
	creds Credentials
	store Store
	runID string
}

func (r runCredentials) Credential(ctx context.Context, name string) (*tool.Secret, error) {
	run, err := r.store.GetRunInfo(ctx, r.runID)
	if err != nil {
		return nil, fmt.Errorf("credential %q: the run's chain: %w", name, err)
	}
	return r.creds.ForChain(run.ChainID).Credential(ctx, name)
}
