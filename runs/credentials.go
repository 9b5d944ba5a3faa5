package runs

import (
	"context"
	"fmt"
	"sync"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
)

// Credentials gives the resolver for the runs of one saved chain (chainID ""
// for a chain that is not saved: an A2E request, an agent's chain), and
// tells the validator about a credential a chain names: its type, whether
// it exists and can be read, whether chainID may use it and whether it may
// be sent anywhere.
type Credentials interface {
	ForChain(chainID string) tool.Credentials
	Usable(ctx context.Context, chainID, name string) chain.CredentialUse
}

// runCredentials resolves credentials for one run: the chain the run
// belongs to decides which it may use. The run's record is read at the
// first use (and again only after a failed read), so a run without
// credentials costs nothing and one that makes many calls reads it once.
type runCredentials struct {
	creds Credentials
	store Store
	runID string

	mu       sync.Mutex
	resolver tool.Credentials // nil until the run's record was read
}

func (r *runCredentials) Credential(ctx context.Context, name string) (*tool.Secret, error) {
	r.mu.Lock()
	if r.resolver == nil {
		run, err := r.store.GetRunInfo(ctx, r.runID)
		if err != nil { // not kept: the next call reads again
			r.mu.Unlock()
			return nil, fmt.Errorf("credential %q: the run's chain: %w", name, err)
		}
		r.resolver = r.creds.ForChain(run.ChainID)
	}
	res := r.resolver
	r.mu.Unlock()
	return res.Credential(ctx, name)
}
