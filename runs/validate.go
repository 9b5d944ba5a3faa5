package runs

import (
	"context"

	"github.com/chainstudio/studio/engine"
)

// InvalidChainError refuses a run whose chain has validation errors, before
// anything is recorded. Issues are all the validator found (warnings too).
type InvalidChainError struct {
	Issues []engine.Issue
}

func (e *InvalidChainError) Code() string { return engine.CodeInvalid }
func (e *InvalidChainError) Error() string {
	return (&engine.ValidationError{Issues: e.Issues}).Error()
}

// validation holds the checks that do not depend on the chain or the
// request (built once in New); the per-call parts are added by
// ValidateOptions.
type validation struct {
	base engine.ValidateOptions
}

func newValidation(opts Options) validation {
	reg := opts.Registry
	return validation{base: engine.ValidateOptions{
		Limits:          opts.Limits,
		Tools:           reg.Has,
		ToolUnavailable: reg.Unavailable,
		ToolOutput:      reg.OutputSchema,
		Schemas:         reg.NodeSchemas(opts.Agents.Schemas),
		Check:           reg.NodeCheck,
	}}
}

// ValidateOptions are the checks a chain is held to in this studio: skills
// resolve against the saved chains, tools against the registry, and the
// credentials it names must be usable by the saved chain chainID ("" for a
// chain not saved yet, which only credentials open to every chain allow).
// The editor shows what they find; a run is refused on their errors.
func (s *Service) ValidateOptions(ctx context.Context, chainID string) engine.ValidateOptions {
	return s.validateOptions(ctx, chainID, true)
}

// validateOptions is ValidateOptions; known false skips whether the chain
// may use a credential (an ad-hoc run, whose chain is no saved one: the
// call itself checks).
func (s *Service) validateOptions(ctx context.Context, chainID string, known bool) engine.ValidateOptions {
	vo := s.valid.base
	vo.Resolve = func(name string) (*engine.Chain, bool) {
		ch, err := s.store.ResolveChain(ctx, name)
		return ch, err == nil && ch != nil
	}
	if s.creds != nil {
		vo.Credential = func(name string) (string, bool, bool) {
			typ, found, allowed := s.creds.Usable(ctx, chainID, name)
			return typ, found, allowed || !known
		}
	}
	return vo
}

// CheckRun validates doc as a run of the saved chain chainID is before it
// starts: the chain's own rules, not its test cases (a broken test fails
// `studio test` and shows in the editor, but does not stop the chain from
// running). It returns nil or an *InvalidChainError. Every Start, RunNode,
// re-run on another version and ad-hoc run calls it; a transport calls it
// itself only to refuse before something it must do first (a webhook
// spending its signature).
func (s *Service) CheckRun(ctx context.Context, chainID string, doc *engine.Chain) error {
	return s.checkRun(ctx, chainID, true, doc)
}

// CheckAdHoc is CheckRun for a chain that is not saved (an A2E request):
// its issues, for hosts that answer them in their own words.
func (s *Service) CheckAdHoc(ctx context.Context, doc *engine.Chain) []engine.Issue {
	return s.runIssues(ctx, "", false, doc)
}

func (s *Service) checkRun(ctx context.Context, chainID string, known bool, doc *engine.Chain) error {
	if issues := s.runIssues(ctx, chainID, known, doc); engine.HasErrors(issues) {
		return &InvalidChainError{Issues: issues}
	}
	return nil
}

func (s *Service) runIssues(ctx context.Context, chainID string, known bool, doc *engine.Chain) []engine.Issue {
	vo := s.validateOptions(ctx, chainID, known)
	vo.SkipTests = true
	return engine.ValidateWith(doc, vo)
}
