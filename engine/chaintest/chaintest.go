// Package chaintest runs the tests a chain document carries (its `tests`
// array): each test runs the chain in memory with its mocks given instead of
// the mocked nodes, then its assertions are checked. It does no I/O of its
// own: only the host's pure (inline) and contained tools (a code node's
// sandboxed script) run for real; any other tool,
// program, sub-chain or agent a test reaches without a mock is refused, so a
// test never touches the network, a process or a file.
package chaintest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/tool"
)

// DefaultTimeout bounds one test run when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// maxShown bounds the JSON bytes of an expected or actual value in a report.
const maxShown = 2048

// Options configure a test session.
type Options struct {
	// Registry is the host's tools; only those marked inline (pure, see
	// engine.Registry.SetInline) or contained (SetContained) are ever
	// called. nil: no tool runs for real.
	Registry *engine.Registry
	Limits   chain.Limits
	// Timeout bounds each test's run (default DefaultTimeout).
	Timeout time.Duration
	// Only runs the test with this name alone ("" runs every test).
	Only string
}

// Failure kinds.
const (
	KindStatus   = "status"   // the run ended with another status
	KindRan      = "ran"      // a node in assert.ran did not run
	KindNotRan   = "not_ran"  // a node in assert.not_ran ran
	KindExpect   = "expect"   // an expect assertion is false, or its expression failed
	KindUnmocked = "unmocked" // the run reached a node that can reach outside and has no mock
	KindInvalid  = "invalid"  // the chain or the test has validation errors: nothing ran
)

// Failure is one failed assertion, with what was expected and what happened.
type Failure struct {
	Kind     string `json:"kind"`
	Field    string `json:"field"`          // the assertion's place: assert.expect[2]
	Node     string `json:"node,omitempty"` // the node it concerns
	Expected any    `json:"expected,omitempty"`
	Actual   any    `json:"actual,omitempty"`
	Message  string `json:"message"`
}

// TestResult is the outcome of one test.
type TestResult struct {
	Index      int             `json:"index"` // position in the chain's tests
	Name       string          `json:"name"`
	Passed     bool            `json:"passed"`
	Status     chain.RunStatus `json:"status,omitempty"` // how the test's run ended
	Ran        []string        `json:"ran"`              // nodes that ran, in the order they started
	Failures   []Failure       `json:"failures,omitempty"`
	DurationMS float64         `json:"duration_ms"`
}

// Report is the outcome of every test of one chain.
type Report struct {
	Chain      string       `json:"chain"`
	Total      int          `json:"total"`
	Passed     int          `json:"passed"`
	Failed     int          `json:"failed"`
	Tests      []TestResult `json:"tests"`
	DurationMS float64      `json:"duration_ms"`
}

// ErrNoTest is returned by Run when Options.Only names no test.
var ErrNoTest = errors.New("no such test")

// Run runs the chain's tests (or the one Options.Only names) and reports
// each. The error is non-nil only for ErrNoTest or a host failure.
func Run(ctx context.Context, c *chain.Chain, opts Options) (*Report, error) {
	start := time.Now()
	rep := &Report{Chain: c.Name, Tests: []TestResult{}}
	idx := make([]int, 0, len(c.Tests))
	for i := range c.Tests {
		if opts.Only == "" || c.Tests[i].Name == opts.Only {
			idx = append(idx, i)
		}
	}
	if opts.Only != "" && len(idx) == 0 {
		return nil, fmt.Errorf("%w named %q in chain %q", ErrNoTest, opts.Only, c.Name)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	s := newSession(c, opts)
	// Validation once for the chain and its tests: a chain with errors runs
	// no test, a test with errors does not run (both reported as failures).
	vo := chain.ValidateOptions{Limits: opts.Limits, ToolOutput: s.host.OutputSchema}
	if opts.Registry != nil {
		vo.Tools = opts.Registry.Has
	}
	issues := chain.ValidateWith(c, vo)
	var chainErrs []string
	testErrs := map[int][]string{}
	for _, is := range issues {
		if is.Severity != chain.SeverityError {
			continue
		}
		if i, ok := testIndex(is.Field); ok {
			testErrs[i] = append(testErrs[i], is.String())
			continue
		}
		chainErrs = append(chainErrs, is.String())
	}
	var prep *chain.Plan
	if len(chainErrs) == 0 {
		prep, _ = chain.Compile(c, vo)
	}
	for _, i := range idx {
		var tr TestResult
		switch {
		case len(chainErrs) > 0:
			tr = invalid(i, &c.Tests[i], "the chain has errors, so no test can run: "+listed(chainErrs))
		case len(testErrs[i]) > 0:
			tr = invalid(i, &c.Tests[i], "the test has errors: "+listed(testErrs[i]))
		default:
			var err error
			if tr, err = s.runTest(ctx, prep, i); err != nil {
				return nil, err
			}
		}
		rep.Tests = append(rep.Tests, tr)
		rep.Total++
		if tr.Passed {
			rep.Passed++
		} else {
			rep.Failed++
		}
	}
	rep.DurationMS = ms(time.Since(start))
	return rep, nil
}

// testIndex reads the test index out of an issue's field `tests[3] ...`.
func testIndex(field string) (int, bool) {
	rest, ok := strings.CutPrefix(field, "tests[")
	if !ok {
		return 0, false
	}
	var i int
	if _, err := fmt.Sscanf(rest, "%d]", &i); err != nil {
		return 0, false
	}
	return i, true
}

func listed(ss []string) string {
	const max = 5
	if len(ss) > max {
		return strings.Join(ss[:max], "; ") + fmt.Sprintf("; and %d more", len(ss)-max)
	}
	return strings.Join(ss, "; ")
}

func invalid(i int, t *chain.Test, msg string) TestResult {
	return TestResult{Index: i, Name: t.Name, Ran: []string{}, Failures: []Failure{{Kind: KindInvalid, Field: chain.TestField(i, t.Name, ""), Message: msg}}}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// session is one Run: an engine whose registry holds only the host's pure
// tools, and refusing stand-ins for everything else.
type session struct {
	c    *chain.Chain
	opts Options
	host *engine.Registry
	reg  *engine.Registry
	eng  *engine.Engine
	// outside marks the nodes whose execution can reach outside the studio
	// (non-pure tools, proc, skill, agent): without a mock they are refused.
	outside map[string]string // node id → what it is ("tool \"http\"")
}

// errNotMocked is what a refused stand-in returns.
var errNotMocked = errors.New("not mocked: a test never calls a tool that can reach outside the studio (network, processes, files); give this node a mock")

func newSession(c *chain.Chain, opts Options) *session {
	host := opts.Registry
	if host == nil {
		host = engine.NewRegistry()
	}
	reg := engine.NewRegistry()
	for _, name := range host.Names() {
		if host.IsScoped(name) {
			reg.SetScoped(name)
		}
		if host.IsInline(name) || host.IsContained(name) {
			fn, _ := host.Get(name)
			reg.Register(name, fn)
			if host.IsInline(name) {
				reg.SetInline(name)
			}
			continue
		}
		if name == "proc" {
			continue // proc nodes then fail with "disabled", no program runs
		}
		reg.Register(name, func(context.Context, map[string]any, tool.Emitter) (any, error) { return nil, errNotMocked })
	}
	s := &session{c: c, opts: opts, host: host, reg: reg, outside: map[string]string{}}
	for i := range c.Nodes {
		nd := &c.Nodes[i]
		switch nd.Kind {
		case chain.KindTool:
			if !host.IsInline(nd.Name) && !host.IsContained(nd.Name) {
				s.outside[nd.ID] = fmt.Sprintf("tool %q", nd.Name)
			}
		case chain.KindProc:
			s.outside[nd.ID] = "a proc node"
		case chain.KindSkill:
			s.outside[nd.ID] = fmt.Sprintf("sub-chain %q", nd.Name)
		case chain.KindAgent:
			s.outside[nd.ID] = fmt.Sprintf("agent %q", nd.Name)
		}
	}
	s.eng = engine.New(engine.Options{
		Registry: reg,
		Limits:   opts.Limits,
		// Chains and Agent stay nil: an unmocked skill or agent node fails
		// with a message and nothing outside runs.
	})
	return s
}

// recorder collects which nodes started, in order (map bodies and parallel
// branches included).
type recorder struct {
	seen map[string]bool
	ran  []string
}

func (r *recorder) Emit(ev engine.Event) {
	if ev.Phase != engine.PhaseStart || ev.NodeID == "" || r.seen[ev.NodeID] {
		return
	}
	r.seen[ev.NodeID] = true
	r.ran = append(r.ran, ev.NodeID)
}

func (s *session) runTest(ctx context.Context, prep *chain.Plan, i int) (TestResult, error) {
	t := &s.c.Tests[i]
	start := time.Now()
	tr := TestResult{Index: i, Name: t.Name}
	rec := &recorder{seen: map[string]bool{}}
	tctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	res, err := s.eng.Run(tctx, prep, t.Input, engine.RunOptions{Mocks: t.Mocks, MockErrors: t.Errors, Sink: rec})
	if err != nil {
		return tr, fmt.Errorf("test %q: %w", t.Name, err)
	}
	tr.Status = res.Status
	tr.Ran = rec.ran
	if tr.Ran == nil {
		tr.Ran = []string{}
	}
	field := func(f string) string { return chain.TestField(i, t.Name, f) }
	fail := func(f Failure) { tr.Failures = append(tr.Failures, f) }

	// A reached node that can reach outside and has no mock: named first,
	// since it explains the failures that follow.
	for _, id := range tr.Ran {
		what, out := s.outside[id]
		_, mocked := t.Mocks[id]
		if _, failed := t.Errors[id]; out && !mocked && !failed {
			fail(Failure{Kind: KindUnmocked, Field: field("mocks." + id), Node: id,
				Message: fmt.Sprintf("node %q (%s) ran without a mock; a test never calls it: add mocks.%s", id, what, id)})
		}
	}
	a := &t.Assert
	if a.Status != "" && res.Status != a.Status {
		f := Failure{Kind: KindStatus, Field: field("assert.status"), Expected: string(a.Status), Actual: string(res.Status),
			Message: fmt.Sprintf("the run ended %s, want %s", res.Status, a.Status)}
		if res.Error != nil {
			f.Node = res.Error.NodeID
			f.Message += ": " + res.Error.Message
		}
		fail(f)
	}
	for k, id := range a.Ran {
		if !rec.seen[id] {
			fail(Failure{Kind: KindRan, Field: field(fmt.Sprintf("assert.ran[%d]", k)), Node: id, Expected: "ran", Actual: notRanWhy(res, id),
				Message: fmt.Sprintf("node %q did not run (%s)", id, notRanWhy(res, id))})
		}
	}
	for k, id := range a.NotRan {
		if rec.seen[id] {
			fail(Failure{Kind: KindNotRan, Field: field(fmt.Sprintf("assert.not_ran[%d]", k)), Node: id, Expected: "not run", Actual: "ran",
				Message: fmt.Sprintf("node %q ran, but the test says it must not", id)})
		}
	}
	if len(a.Expect) > 0 {
		sc := s.scope(t, res)
		for k := range a.Expect {
			if f, ok := s.check(sc, &a.Expect[k], field(fmt.Sprintf("assert.expect[%d]", k))); !ok {
				if f.Node == "" && readsOutput(&a.Expect[k]) {
					f.Node = finalNode(res, rec.ran)
				}
				fail(f)
			}
		}
	}
	tr.Passed = len(tr.Failures) == 0
	tr.DurationMS = ms(time.Since(start))
	return tr, nil
}

// readsOutput reports whether an assertion reads the final output.
func readsOutput(x *chain.Expect) bool {
	e, err := expr.Parse(x.Expression())
	if err != nil {
		return false
	}
	for _, r := range e.Refs() {
		if r.Root == "output" {
			return true
		}
	}
	return false
}

// finalNode is the node that gave the run its final output: the last node
// to start whose output is it.
func finalNode(res *engine.Result, ran []string) string {
	for k := len(ran) - 1; k >= 0; k-- {
		if nr := res.Nodes[ran[k]]; nr != nil && nr.Status == engine.PhaseDone && chain.EqualJSON(nr.Output, res.FinalOutput) {
			return ran[k]
		}
	}
	return ""
}

// notRanWhy says what became of a node that did not run.
func notRanWhy(res *engine.Result, id string) string {
	nr, ok := res.Nodes[id]
	if !ok || nr == nil {
		return "never reached"
	}
	if nr.Reason != "" {
		return string(nr.Status) + ": " + nr.Reason
	}
	return string(nr.Status)
}

// scope is what assertion expressions read: input, output (the final
// output), status, state, error, steps.<id> and <id> for every node with a
// result ({status, output, error, reason, matched}).
func (s *session) scope(t *chain.Test, res *engine.Result) expr.MapScope {
	steps := make(map[string]any, len(res.Nodes))
	for id, nr := range res.Nodes {
		if nr == nil {
			continue
		}
		st := map[string]any{"status": string(nr.Status), "output": nr.Output}
		if nr.Error != "" {
			st["error"] = nr.Error
		}
		if nr.Reason != "" {
			st["reason"] = nr.Reason
		}
		if nr.Matched != "" {
			st["matched"] = nr.Matched
		}
		steps[id] = st
	}
	sc := expr.MapScope{}
	for id, st := range steps {
		if !chain.IsReserved(id) {
			sc[id] = st
		}
	}
	input := t.Input
	if input == nil {
		input = map[string]any{}
	}
	sc["steps"] = steps
	sc["input"] = input
	sc["output"] = res.FinalOutput
	sc["status"] = string(res.Status)
	sc["state"] = res.State
	if res.Error != nil {
		sc["error"] = map[string]any{"code": res.Error.Code, "message": res.Error.Message, "node_id": res.Error.NodeID}
	}
	return sc
}

// check evaluates one expect assertion.
func (s *session) check(sc expr.MapScope, x *chain.Expect, field string) (Failure, bool) {
	src := x.Expression()
	f := Failure{Kind: KindExpect, Field: field, Node: s.concerns(x)}
	e, err := expr.Parse(src)
	if err != nil { // validation reports it first; kept for hand-built chains
		f.Message = fmt.Sprintf("%s does not parse: %v", quoteExpr(src), err)
		return f, false
	}
	got, err := e.EvalContext(context.Background(), sc, false)
	if err != nil {
		f.Message = fmt.Sprintf("%s could not be evaluated: %v", quoteExpr(src), err)
		return f, false
	}
	if x.Path != "" {
		var want any
		if err := json.Unmarshal(x.Equals, &want); err != nil {
			f.Message = fmt.Sprintf("equals is not JSON: %v", err)
			return f, false
		}
		if chain.EqualJSON(got, want) {
			return f, true
		}
		f.Expected, f.Actual = shown(want), shown(got)
		f.Message = fmt.Sprintf("%s is %s, want %s", quoteExpr(src), compact(got), compact(want))
		return f, false
	}
	if expr.Truthy(got) {
		return f, true
	}
	f.Expected, f.Actual = true, shown(got)
	f.Message = fmt.Sprintf("%s is %s, want true", quoteExpr(src), compact(got))
	if vals := s.readValues(e, sc); vals != "" {
		f.Message += " (" + vals + ")"
	}
	return f, false
}

// readValues shows the values a failed boolean expression read, as people
// debug one: `score.output.value` was 3.
func (s *session) readValues(e *expr.Expr, sc expr.MapScope) string {
	var parts []string
	for _, r := range e.Refs() {
		if r.Root == "@" || r.Field == "" {
			continue
		}
		root, ok := sc[r.Root].(map[string]any)
		if !ok {
			continue
		}
		path := r.Root + "." + r.Field
		parts = append(parts, fmt.Sprintf("%s was %s", path, compact(root[r.Field])))
		if len(parts) == 3 {
			break
		}
	}
	return strings.Join(parts, ", ")
}

// concerns is the node an assertion is about: its node field, else the
// first node its expression reads (<id>.… or steps.<id>.…).
func (s *session) concerns(x *chain.Expect) string {
	if x.Node != "" {
		return x.Node
	}
	e, err := expr.Parse(x.Expression())
	if err != nil {
		return ""
	}
	var found []string
	for _, r := range e.Refs() {
		switch {
		case r.Root == "steps" && r.Field != "" && s.c.Node(r.Field) != nil:
			found = append(found, r.Field)
		case !chain.IsReserved(r.Root) && s.c.Node(r.Root) != nil:
			found = append(found, r.Root)
		}
	}
	if len(found) == 0 {
		return ""
	}
	sort.Strings(found)
	return found[0]
}

func quoteExpr(src string) string { return "`" + truncate(src, 200) + "`" }

// shown is v for a report, replaced by a note when its JSON is too long.
func shown(v any) any {
	b, err := json.Marshal(v)
	if err != nil || len(b) <= maxShown {
		return v
	}
	return fmt.Sprintf("(%d bytes of JSON) %s…", len(b), truncate(string(b), 200))
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return truncate(string(b), 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Trace is what one test's run produced: the data a designer can preview
// expressions against before the chain has ever run.
type Trace struct {
	Test    string          // the test's name
	Status  chain.RunStatus // how its run ended
	Input   map[string]any
	Outputs map[string]any // node id → output, for the nodes that produced one
}

// RunTrace runs test i of c in memory, as Run does (its mocks stand in for
// every node that could reach outside; only pure tools run), and returns
// what each node output. A chain with validation errors runs nothing.
func RunTrace(ctx context.Context, c *chain.Chain, opts Options, i int) (*Trace, error) {
	if i < 0 || i >= len(c.Tests) {
		return nil, fmt.Errorf("%w: index %d of %d", ErrNoTest, i, len(c.Tests))
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	s := newSession(c, opts)
	vo := chain.ValidateOptions{Limits: opts.Limits, ToolOutput: s.host.OutputSchema}
	if opts.Registry != nil {
		vo.Tools = opts.Registry.Has
	}
	p, err := chain.Compile(c, vo)
	if err != nil {
		return nil, errors.New("the chain has validation errors: its tests cannot run")
	}
	t := &c.Tests[i]
	tctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	res, err := s.eng.Run(tctx, p, t.Input, engine.RunOptions{Mocks: t.Mocks, MockErrors: t.Errors})
	if err != nil {
		return nil, fmt.Errorf("test %q: %w", t.Name, err)
	}
	out := res.Outputs
	if out == nil {
		out = map[string]any{}
	}
	return &Trace{Test: t.Name, Status: res.Status, Input: t.Input, Outputs: out}, nil
}
