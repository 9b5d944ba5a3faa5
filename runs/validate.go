package runs

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// InvalidChainError refuses a run whose chain has validation errors, before
// anything is recorded. Issues are all the validator found (warnings too).
type InvalidChainError struct {
	Issues []chain.Issue
}

func (e *InvalidChainError) Code() string { return chain.CodeInvalid }
func (e *InvalidChainError) Error() string {
	return (&chain.ValidationError{Issues: e.Issues}).Error()
}

// validation holds the checks that do not depend on the chain or the
// request (built once in New); the per-call parts are added by
// ValidateOptions. It is the one place this studio's environment is built:
// the editor, the API's validate, every run and the engine's own checks
// (resumes, sub-chains) use it.
type validation struct {
	base  chain.ValidateOptions
	plans planMemo
	// unpriced: no price table, so the editor and the API's validate call a
	// chain's budget in cost an error. Runs are not refused for it (a
	// worker has no --prices): such a call fails unpriced when made.
	unpriced bool
}

func newValidation(opts Options) validation {
	reg := opts.Registry
	return validation{base: chain.ValidateOptions{
		Limits:          opts.Limits,
		Tools:           reg.Has,
		ToolUnavailable: reg.Unavailable,
		ToolOutput:      reg.OutputSchema,
		Schemas:         reg.NodeSchemas(opts.Agents.NodeSchemas),
		Check:           reg.NodeCheck,
		NodeConfig:      opts.Agents.CheckNode,
	}, unpriced: opts.Prices == nil}
}

// ValidateOptions are the checks a chain is held to in this studio: skills
// resolve against the saved chains, tools against the registry, and the
// credentials it names must be usable by the saved chain chainID ("" for a
// chain not saved yet, which only credentials open to every chain allow).
// The editor shows what they find; a run is refused on their errors.
func (s *Service) ValidateOptions(ctx context.Context, chainID string) chain.ValidateOptions {
	vo := s.validateOptions(ctx, chainID, true)
	vo.Unpriced = s.valid.unpriced
	return vo
}

// FieldOptions are ValidateOptions for one expression field checked as it
// is typed: only the expression rules can name such a field, and none of
// them needs sub-chains, tools, schemas or credentials, so a keystroke's
// check stays off the store.
func (s *Service) FieldOptions() chain.ValidateOptions {
	return chain.ValidateOptions{Limits: s.valid.base.Limits}
}

// validateOptions is ValidateOptions; known false skips whether the chain
// may use a credential (an ad-hoc run, whose chain is no saved one: the
// call itself checks).
func (s *Service) validateOptions(ctx context.Context, chainID string, known bool) chain.ValidateOptions {
	vo := s.valid.base
	vo.Resolve = func(name string) (*chain.Chain, bool) {
		ch, err := s.store.ResolveChain(ctx, name)
		return ch, err == nil && ch != nil
	}
	if s.creds != nil {
		vo.Credential = func(name string) chain.CredentialUse {
			cu := s.creds.Usable(ctx, chainID, name)
			cu.Allowed = cu.Allowed || !known
			return cu
		}
	}
	return vo
}

// CheckRun validates the doc of ch as a run of the saved chain ch.ID (""
// and version 0: a chain not saved yet) is before it starts: the chain's
// own rules, not its test cases (a broken test fails `studio test` and
// shows in the editor, but does not stop the chain from running). It
// returns nil or an *InvalidChainError. Every Start, RunNode, re-run on
// another version and ad-hoc run checks the same way; a transport calls it
// itself only to refuse before something it must do first (a webhook
// spending its signature): the run it then starts uses the plan this check
// made, not a second check.
func (s *Service) CheckRun(ctx context.Context, ch *store.Chain) error {
	_, err := s.compile(ctx, ch.ID, ch.Version, true, ch.Doc)
	return err
}

// CheckAdHoc is CheckRun for a chain that is not saved (an A2E request):
// its issues, for hosts that answer them in their own words.
func (s *Service) CheckAdHoc(ctx context.Context, doc *chain.Chain) []chain.Issue {
	p, _ := s.compile(ctx, "", 0, false, doc)
	return p.Issues()
}

// compile checks doc once and gives the plan its run executes: nil and an
// *InvalidChainError when doc has errors. version is doc's saved version
// (0: none). A doc checked a moment ago, or another copy of the same saved
// version, is not checked again (see planMemo).
func (s *Service) compile(ctx context.Context, chainID string, version int, known bool, doc *chain.Chain) (*chain.Plan, error) {
	byDoc := planKey{doc: doc, chainID: chainID, known: known}
	byVersion := planKey{chainID: chainID, version: version, known: known}
	now := s.now()
	p := s.valid.plans.get(byDoc, now)
	if p == nil && version > 0 && chainID != "" {
		p = s.valid.plans.get(byVersion, now)
	}
	if p == nil {
		p, _ = chain.Compile(doc, s.validateOptions(ctx, chainID, known))
	}
	s.valid.plans.put(byDoc, p, now)
	if version > 0 && chainID != "" {
		s.valid.plans.put(byVersion, p, now)
	}
	if !p.Valid() {
		return p, &InvalidChainError{Issues: p.Issues()}
	}
	return p, nil
}

// compileStarted is compile for a run that was accepted already (a worker
// taking its job, a run requeued at start): a plan with errors is returned
// to be run, and so recorded as refused.
func (s *Service) compileStarted(ctx context.Context, chainID string, version int, doc *chain.Chain) *chain.Plan {
	p, _ := s.compile(ctx, chainID, version, chainID != "", doc)
	return p
}

// engineCompile is the engine's Options.Compile: the chains it meets
// without a plan (a resumed run's, a skill's sub-chain) are checked against
// this studio's environment, credentials left to the calls.
func (s *Service) engineCompile(ctx context.Context, doc *chain.Chain) (*chain.Plan, error) {
	return chain.Compile(doc, s.validateOptions(ctx, "", false))
}

// planMemo keeps the plans of the last few checks, by document and by saved
// version, so that a transport's check and the run it starts share one
// plan, and runs of one version in a burst (a webhook's, a worker's queue)
// share one. A plan is kept for seconds only: what it was checked against
// (credentials, MCP servers, the saved sub-chains) can change without a new
// version, and the next check after that sees the change.
type planMemo struct {
	mu   sync.Mutex
	ents []memoEntry // oldest first
}

// planKey is a document (doc set) or a saved version (doc nil), checked
// for the saved chain chainID, its credentials known or not.
type planKey struct {
	doc     *chain.Chain
	chainID string
	version int
	known   bool
}

type memoEntry struct {
	key  planKey
	plan *chain.Plan
	at   time.Time
}

// planMemoSize and planMemoAge bound the memo.
const (
	planMemoSize = 32
	planMemoAge  = 5 * time.Second
)

func (m *planMemo) get(k planKey, now time.Time) *chain.Plan {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.ents {
		if e.key == k && now.Sub(e.at) < planMemoAge {
			return e.plan
		}
	}
	return nil
}

func (m *planMemo) put(k planKey, p *chain.Plan, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ents = slices.DeleteFunc(m.ents, func(e memoEntry) bool { return e.key == k || now.Sub(e.at) >= planMemoAge })
	if len(m.ents) == planMemoSize {
		m.ents = slices.Delete(m.ents, 0, 1)
	}
	m.ents = append(m.ents, memoEntry{k, p, now})
}
