package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/tool"
)

// start launches node i: it resolves the input on the coordinator (where the
// whole context is consistent), emits "start", and hands the work to a
// goroutine. Routers (branch, condition) and resumed interrupts finish inline.
func (r *run) start(i int) {
	nd := &r.chain.Nodes[i]
	up := r.upstream(i)
	r.nodes.activators[i] = r.nodes.activators[i][:0]
	r.nodes.status[i] = nsRunning
	r.nodes.decided[i], r.nodes.fired[i] = 0, 0
	r.nodes.pruneReason[i] = ""
	r.nodes.iterations[i]++
	r.nodesRun++
	r.sched.running++
	r.chargeNode()
	now := stamp()
	r.nodes.result[i] = NodeResult{NodeID: nd.ID, Status: PhaseStart, Started: now, Iteration: r.nodes.iterations[i]}

	if rec, ok := r.rerun.takeReused(nd.ID); ok { // re-run from a node: upstream outputs are kept
		r.emit(Event{NodeID: nd.ID, Phase: PhaseStart, Attempt: 1, Iteration: r.nodes.iterations[i], Time: now, Reused: true})
		r.complete(completion{i: i, out: rec.Output, input: rec.Input, attempts: rec.Attempts, matched: rec.Matched, partial: rec.Partial, started: now, ended: stamp(), reused: true,
			decided: routerTests(rec.Decisions), credentialed: rec.Credentialed})
		return
	}

	sc := &scope{base: &r.scope, output: up, hasOut: true}
	if d := r.sched.dispatch.byTarget[i]; d != nil { // a sequential link: its input may read the links already run
		sc.steps, sc.whens = d.steps, d.whens
	}
	if v, ok := r.nodes.resumeValue[i]; ok {
		sc.resume, sc.hasRes = v, true
		delete(r.nodes.resumeValue, i)
	}
	if e, ok := r.nodes.handlerErr[i]; ok {
		sc.err = e
		delete(r.nodes.handlerErr, i)
	}
	if err := r.nodes.presetErr[i]; err != nil {
		// The guard into this node failed: it never starts (no start
		// event), and nodeFailed records it as skipped with the error.
		r.nodes.presetErr[i] = nil
		r.complete(completion{i: i, err: err, attempts: 0, guard: true, started: now, ended: now})
		return
	}
	r.emit(Event{NodeID: nd.ID, Phase: PhaseStart, Attempt: 1, Iteration: r.nodes.iterations[i], Time: now, Pinned: r.rerun.pinnedNode(nd)})
	input, err := r.buildInput(i, sc, up)
	if err != nil {
		r.complete(completion{i: i, err: err, attempts: 1, started: now, ended: stamp()})
		return
	}
	if out, err, pinned, ok := r.rerun.mocked(nd); ok {
		r.complete(completion{i: i, out: out, err: err, input: input, attempts: 1, started: now, ended: stamp(), pinned: pinned})
		return
	}
	switch nd.Kind {
	case chain.KindBranch, chain.KindCondition:
		matched, decided, err := r.matchHandle(i, input, sc)
		r.complete(completion{i: i, out: input, input: input, err: err, matched: matched, attempts: 1, started: now, ended: stamp(), decided: decided})
		return
	case chain.KindInterrupt:
		if sc.hasRes {
			out, matched, err := r.answerInterrupt(i, input, sc.resume)
			r.complete(completion{i: i, out: out, err: err, matched: matched, input: input, attempts: 1, started: now, ended: stamp()})
			return
		}
		prompt, asked, err := r.ask(nd, input, sc)
		if err != nil {
			r.complete(completion{i: i, err: err, input: input, attempts: 1, started: now, ended: stamp()})
			return
		}
		r.complete(completion{i: i, err: tool.Interrupt(prompt), input: input, asked: asked, attempts: 1, started: now, ended: stamp()})
		return
	}
	if r.bind.inline[i] && !sc.hasRes {
		r.runInline(i, input, now)
		return
	}
	var fs *scope
	if r.bind.frozen[i] != nil || r.bind.frozenAll[i] {
		fs = &scope{base: r.scope.freeze(r.bind.frozen[i], r.bind.frozenAll[i]), output: input, hasOut: true, err: sc.err}
	}
	if r.bind.scoped[i] {
		// A scoped tool reads the run's data from the worker: a snapshot,
		// with the upstream data as `output`, as input_map would see it.
		names := append(slices.Clone(scopeNames), r.bind.frozen[i]...)
		fs = &scope{base: r.scope.freeze(names, r.bind.frozenAll[i]), output: up, hasOut: true, err: sc.err}
	}
	r.sched.openReports(len(r.chain.Nodes))
	var ans *tool.Answer
	if sc.hasRes {
		ans = r.takeAnswer(i, sc.resume)
	}
	go r.work(i, input, sc.resume, sc.hasRes, ans, fs, r.takeFan(i), now)
}

// takeAnswer is the answer a node that paused itself (a tool's
// InterruptError) is resumed with: the action, the value (an approval
// without one approves the proposal) and the state it paused with.
func (r *run) takeAnswer(i int, value any) *tool.Answer {
	rec, p := r.nodes.answers[i], r.nodes.answered[i]
	delete(r.nodes.answers, i)
	delete(r.nodes.answered, i)
	if rec == nil {
		return nil
	}
	a := &tool.Answer{Action: rec.Action, Value: value, Comment: rec.Comment, By: rec.By, State: p.state}
	if a.Action == "" {
		a.Action = ActionRespond
	}
	if a.Action == ActionApprove && (!rec.HasValue || rec.Value == nil) && p.approval != nil {
		a.Value = p.approval.Proposed
	}
	return a
}

// ask is what an interrupt node shows the person who answers it: its
// config.prompt with each {{ }} rendered over the run's data (as input_map
// sees it: `output` is what the node received), else its input; and its
// config.fields evaluated. An error names the field (config.prompt.question,
// config.fields.Order) and fails the node.
func (r *run) ask(nd *chain.Node, input any, sc *scope) (prompt any, asked []ApprovalField, err error) {
	prompt = input
	if p, ok := nd.Config["prompt"]; ok {
		prompt, err = chain.RenderTemplates(p, "config.prompt", func(t *expr.Template) (any, error) {
			v, err := t.Render(sc, r.strict)
			return chain.NormalizeValue(v), err
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if _, ok := nd.Config["fields"]; !ok {
		return prompt, nil, nil
	}
	ic, _ := chain.ParseInterruptConfig(nd.Config) // validated before the run
	asked = make([]ApprovalField, 0, len(ic.Fields))
	for _, f := range ic.Fields {
		v, err := f.Expr.Eval(sc, r.strict)
		if err != nil {
			return nil, nil, fmt.Errorf("config.fields.%s: %w", f.Label, err)
		}
		asked = append(asked, ApprovalField{Label: f.Label, Value: chain.NormalizeValue(v)})
	}
	return prompt, asked, nil
}

// runInline runs a pure, quick tool (Registry.SetInline) on the coordinator:
// no goroutine, no channel hop. Retries of inline tools do not wait.
func (r *run) runInline(i int, input any, started time.Time) {
	nd := &r.chain.Nodes[i]
	fn := r.bind.inlineFn[i]
	in := toolInput(input)
	var out any
	var err error
	a := 1
	for ; ; a++ {
		ctx := r.ctx
		if a > 1 {
			ctx = tool.WithAttempt(ctx, a)
			r.emit(Event{NodeID: nd.ID, Phase: PhaseStart, Attempt: a})
		}
		out, err = fn(ctx, in, r.progress(nd.ID))
		if err == nil || nd.Retry == nil || a >= nd.Retry.MaxAttempts {
			break
		}
		r.emit(Event{NodeID: nd.ID, Phase: PhaseError, Error: err.Error(), Attempt: a, Reason: ReasonRetrying})
	}
	r.complete(completion{i: i, out: chain.NormalizeValue(out), err: err, attempts: a, input: input, started: started, ended: stamp()})
}

func (r *run) progress(nodeID string) tool.Emitter {
	return func(p any) { r.emit(Event{NodeID: nodeID, Phase: PhaseProgress, Progress: p}) }
}

// work runs one node's attempts on its own goroutine.
func (r *run) work(i int, input any, resume any, resumed bool, ans *tool.Answer, fs *scope, fan *fanState, started time.Time) {
	ctx := r.ctx
	if resumed {
		ctx = tool.WithResume(ctx, resume)
	}
	if ans != nil {
		ctx = tool.WithAnswer(ctx, *ans)
	}
	if k := r.chain.Nodes[i].Kind; k != chain.KindMap && k != chain.KindParallel {
		ctx = fan.ctxFor(ctx, r.chain.Nodes[i].ID) // a skill's sub-chain answers
	} else {
		ctx = context.WithValue(ctx, fanKey{}, fan)
	}
	var sent *sentCredentials
	ctx, sent = watchCredentials(ctx)
	out, attempts, err := r.attempts(ctx, i, nil, func(ctx context.Context) (any, error) {
		return r.execNode(ctx, i, input, fs)
	})
	r.sched.report(completion{i: i, out: out, err: err, attempts: attempts, input: input, started: started, ended: stamp(), credentialed: sent.any()})
}

// buildInput merges a node's static input with its resolved input_map (the
// map wins). A node with neither receives its upstream data unchanged; a
// root whose static input only configures its tool receives it in the
// tool's data field (chain.Graph.DataFlowField).
func (r *run) buildInput(i int, sc *scope, up any) (any, error) {
	nd := &r.chain.Nodes[i]
	ims := r.graph.InputMap[i]
	if len(nd.Input) == 0 && len(ims) == 0 {
		return up, nil
	}
	if f := r.bind.dataFlow[i]; f != "" {
		in := make(map[string]any, len(nd.Input)+1)
		maps.Copy(in, nd.Input)
		in[f] = up
		return in, nil
	}
	if nd.Timeout > 0 && sc.ctx == nil {
		// The node's timeout covers building its input, not only its tool.
		ctx, cancel := context.WithTimeoutCause(r.ctx, time.Duration(nd.Timeout*float64(time.Second)), errNodeTimeout{nd.Timeout})
		defer cancel()
		isc := *sc
		isc.ctx = ctx
		sc = &isc
	}
	in := make(map[string]any, len(nd.Input)+len(ims))
	for k, v := range nd.Input {
		in[k] = v
	}
	for _, ne := range ims {
		v, err := ne.Expr.Eval(sc, r.strict)
		if err != nil {
			return nil, fmt.Errorf("input_map.%s: %w", ne.Key, err)
		}
		in[ne.Key] = v
	}
	return in, nil
}

// toolInput gives tools the object they expect: non-object data arrives as
// {"value": data}.
func toolInput(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	if v == nil {
		return map[string]any{}
	}
	return map[string]any{"value": v}
}

// matchHandle evaluates a branch's condition or a condition node's cases; `output`
// is the data the router passes on. decided records each test (decision.go).
func (r *run) matchHandle(i int, input any, sc *scope) (matched string, decided []Decision, err error) {
	nd := &r.chain.Nodes[i]
	dsc := *sc
	dsc.output, dsc.hasOut = input, true
	if nd.Kind == chain.KindBranch {
		ok, reads, err := r.scratch.test(r.graph.Condition[i], &dsc, r.strict)
		d := Decision{Kind: DecideBranch, Expr: nd.Condition, Reads: reads, Result: resultOf(ok), Handle: resultOf(ok), Rule: RuleFirstMatch}
		if err != nil {
			d.Result, d.Error, d.Handle = ResultError, err.Error(), ""
			return "", []Decision{d}, fmt.Errorf("condition: %w", err)
		}
		return d.Handle, []Decision{d}, nil
	}
	decided = make([]Decision, 0, len(nd.Cases))
	for k, e := range r.graph.Cases[i] {
		d := Decision{Kind: DecideCase, Handle: nd.Cases[k].Handle, Expr: nd.Cases[k].When, Rule: RuleFirstMatch}
		if matched != "" { // an earlier case matched
			d.Result = ResultNotEvaluated
			decided = append(decided, d)
			continue
		}
		ok, reads, err := r.scratch.test(e, &dsc, r.strict)
		d.Reads, d.Result = reads, resultOf(ok)
		if err != nil {
			d.Result, d.Error = ResultError, err.Error()
			return "", append(decided, d), fmt.Errorf("cases[%d] (%s): %w", k, nd.Cases[k].Handle, err)
		}
		if ok {
			matched = nd.Cases[k].Handle
		}
		decided = append(decided, d)
	}
	return matched, decided, nil
}

type errNodeTimeout struct{ seconds float64 }

func (e errNodeTimeout) Error() string { return fmt.Sprintf("timed out after %gs", e.seconds) }

// attempts runs fn under the node's retry and timeout policy. item is the map
// item index for map bodies (nil otherwise), for events.
func (r *run) attempts(ctx context.Context, i int, item *int, fn func(context.Context) (any, error)) (any, int, error) {
	nd := &r.chain.Nodes[i]
	max, backoff, delay := 1, "fixed", 0.0
	if nd.Retry != nil {
		max, backoff, delay = nd.Retry.MaxAttempts, nd.Retry.Backoff, nd.Retry.InitialDelaySeconds
	}
	if nd.Kind == chain.KindAgent {
		// Only agents read it (their memory appends once per execution):
		// two allocations a node is too much to pay on every other one.
		ex := tool.Execution{RunID: r.id, Chain: r.chain.Name, NodeID: nd.ID, Iteration: r.nodes.iterations[i], Item: -1}
		if item != nil {
			ex.Item = *item
		}
		if own, ok := tool.ExecutionFrom(ctx); ok && own.RunID == r.id {
			ex.Iteration = own.Iteration // an attached node repeats with its owner (a map in a loop)
		}
		ctx = tool.WithExecution(ctx, ex)
	}
	for a := 1; ; a++ {
		actx := tool.WithAttempt(ctx, a)
		if hook := r.engine.opts.AttemptContext; hook != nil {
			actx = hook(actx, AttemptInfo{RunID: r.id, NodeID: nd.ID, Kind: nd.Kind, Name: nd.Name, Item: item, Attempt: a})
		}
		out, err := r.attempt(actx, nd, fn)
		if err == nil {
			return out, a, nil
		}
		if isPause(err) || a >= max || ctx.Err() != nil {
			return nil, a, err
		}
		r.emit(Event{NodeID: nd.ID, Phase: PhaseError, Error: err.Error(), Attempt: a, Item: item, Reason: ReasonRetrying})
		wait := time.Duration(delay * float64(time.Second))
		if backoff == "exponential" {
			wait <<= a - 1
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, a, err
			case <-t.C:
			}
		}
		r.emit(Event{NodeID: nd.ID, Phase: PhaseStart, Attempt: a + 1, Item: item})
	}
}

// attempt runs one attempt. With a node timeout the attempt runs on its own
// goroutine, so even a tool that ignores cancellation cannot hold the node.
func (r *run) attempt(ctx context.Context, nd *chain.Node, fn func(context.Context) (any, error)) (any, error) {
	if nd.Timeout <= 0 {
		return fn(ctx)
	}
	tctx, cancel := context.WithTimeoutCause(ctx, time.Duration(nd.Timeout*float64(time.Second)), errNodeTimeout{nd.Timeout})
	defer cancel()
	type res struct {
		out any
		err error
	}
	ch := make(chan res, 1)
	go func() {
		out, err := fn(tctx)
		ch <- res{out, err}
	}()
	select {
	case x := <-ch:
		if x.err != nil && errors.Is(context.Cause(tctx), errNodeTimeout{nd.Timeout}) && ctx.Err() == nil {
			return nil, errNodeTimeout{nd.Timeout}
		}
		return x.out, x.err
	case <-tctx.Done():
		if ctx.Err() == nil {
			return nil, errNodeTimeout{nd.Timeout}
		}
		return nil, context.Cause(ctx)
	}
}

// execNode performs one attempt of a node of any executable kind. fs is the
// frozen scope for map and parallel nodes.
func (r *run) execNode(ctx context.Context, i int, input any, fs *scope) (any, error) {
	nd := &r.chain.Nodes[i]
	ctx = tool.WithNode(ctx, nd.ID)
	emit := func(p any) { r.emit(Event{NodeID: nd.ID, Phase: PhaseProgress, Progress: p}) }
	switch nd.Kind {
	case chain.KindTool:
		fn, ok := r.engine.opts.Registry.Get(nd.Name)
		if !ok {
			return nil, fmt.Errorf("unknown tool %q (this host has: %v)", nd.Name, r.engine.opts.Registry.Names())
		}
		if r.bind.scoped[i] && fs != nil {
			ts := fs.toolScope()
			ts.Session = r.toolSession()
			ctx = tool.WithScope(ctx, ts)
		}
		out, err := fn(ctx, toolInput(input), emit)
		return chain.NormalizeValue(out), err
	case chain.KindProc:
		fn, ok := r.engine.opts.Registry.Get("proc")
		if !ok {
			return nil, fmt.Errorf("proc nodes are disabled on this host: %w", tool.ErrDenied)
		}
		in := maps.Clone(nd.Config)
		if in == nil {
			in = map[string]any{}
		}
		for k, v := range toolInput(input) {
			if _, set := in[k]; !set || k == "stdin" || k == "env" {
				in[k] = v
			}
		}
		out, err := fn(ctx, in, emit)
		return chain.NormalizeValue(out), err
	case chain.KindSkill:
		return r.runSub(ctx, nd.Name, toolInput(input))
	case chain.KindAgent:
		if r.engine.opts.Agent == nil {
			return nil, errors.New("agent nodes need the agent runtime, which this host has not enabled")
		}
		out, err := r.engine.opts.Agent(ctx, nd, toolInput(input), emit)
		return chain.NormalizeValue(out), err
	case chain.KindMap:
		return r.execMap(ctx, i, input, fs)
	case chain.KindParallel:
		return r.execParallel(ctx, i, input, fs)
	}
	return nil, fmt.Errorf("node kind %q cannot run here", nd.Kind)
}

// runSub runs a saved chain as a sub-chain (skill node).
func (r *run) runSub(ctx context.Context, name string, input map[string]any) (any, error) {
	if r.engine.opts.Chains == nil {
		return nil, fmt.Errorf("skill %q: this host has no chain library to run sub-chains from", name)
	}
	maxDepth := r.chain.MaxDepth
	if maxDepth <= 0 {
		maxDepth = chain.DefaultMaxDepth
	}
	if r.depth+1 > maxDepth {
		return nil, fmt.Errorf("skill %q: sub-chain depth %d exceeds max_depth %d", name, r.depth+1, maxDepth)
	}
	c, err := r.engine.opts.Chains(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("skill %q: %w", name, err)
	}
	var res *Result
	if sa, ok := ctx.Value(subAnswersKey{}).(*subAnswers); ok {
		res, err = r.resumeSub(ctx, sa) // answers to the sub-chain's pauses
	} else {
		res, err = r.runSkill(ctx, c, input)
	}
	if err != nil {
		return nil, fmt.Errorf("skill %q: %w", name, err)
	}
	switch res.Status {
	case chain.StatusCompleted, chain.StatusPartial:
		return res.FinalOutput, nil
	case chain.StatusPaused:
		return nil, subPaused(res)
	}
	msg := string(res.Status)
	if res.Error != nil {
		msg += ": " + res.Error.Message
	}
	return nil, fmt.Errorf("skill %q: sub-chain run %s %s", name, res.RunID, msg)
}

// execAttached runs an attached node (map body, parallel branch) inside its
// owner's goroutine, with its own input, retries, timeout and error policy.
func (r *run) execAttached(ctx context.Context, j int, fs *scope, up any, item *int, errScope map[string]any) (any, error) {
	nd := &r.chain.Nodes[j]
	r.nodes.attRan[j].Store(true)
	r.chargeNode()
	r.nodes.attBusy[j].Add(1)
	defer r.nodes.attBusy[j].Add(-1)
	sc := *fs
	sc.output, sc.hasOut = up, true
	if item != nil {
		sc.item, sc.index, sc.inMap = up, *item, true
	}
	if errScope != nil {
		sc.err = errScope
	}
	r.emit(Event{NodeID: nd.ID, Phase: PhaseStart, Attempt: 1, Item: item, Pinned: r.rerun.pinnedNode(nd)})
	input, err := r.buildInput(j, &sc, up)
	attempts := 1
	var out any
	var sent *sentCredentials
	pinned := false
	if m, merr, pin, ok := r.rerun.mocked(nd); ok && err == nil {
		out, err, pinned = m, merr, pin // every item or branch gets the same mock or pin
	} else if err == nil {
		actx, s := watchCredentials(ctx)
		out, attempts, err = r.attempts(actx, j, item, func(ctx context.Context) (any, error) {
			return r.execNode(ctx, j, input, &sc)
		})
		sent = s
	}
	if err == nil {
		r.emit(Event{NodeID: nd.ID, Phase: PhaseDone, Output: out, Attempt: attempts, Item: item, Credentialed: sent.any(), Pinned: pinned})
		return out, nil
	}
	if ie, ok := tool.IsInterrupt(err); ok {
		r.emit(Event{NodeID: nd.ID, Phase: PhasePaused, Prompt: ie.Prompt, Attempt: attempts, Item: item})
		return nil, err // the owner pauses with the slot's id
	}
	if isPause(err) {
		return nil, err
	}
	// A failure the body's own on_error handles is not the owner's failure,
	// but it is still a failure: the slot is marked handled, so the owner
	// succeeds and the run ends partial.
	switch pol := nd.OnErrorOrDefault(); pol {
	case chain.OnErrorSkip:
		r.emitSkippedFailure(Event{NodeID: nd.ID, Error: err.Error(), Attempt: attempts, Item: item})
		r.emit(Event{NodeID: nd.ID, Phase: PhaseSkip, Error: err.Error(), Reason: ReasonOnErrorSkip, Attempt: attempts, Item: item})
		return handledOut{nil}, nil
	case chain.OnErrorContinue:
		r.emit(Event{NodeID: nd.ID, Phase: PhaseError, Error: err.Error(), Attempt: attempts, Item: item})
		return handledOut{errorEntry(err)}, nil
	case chain.OnErrorAbort:
		r.emit(Event{NodeID: nd.ID, Phase: PhaseError, Error: err.Error(), Attempt: attempts, Item: item})
		return nil, err
	default:
		r.emit(Event{NodeID: nd.ID, Phase: PhaseError, Error: err.Error(), Attempt: attempts, Item: item})
		h := r.graph.Idx[pol]
		out, err := r.execAttached(ctx, h, fs, up, item, errorScope(nd.ID, attempts, err.Error(), errorCode(err)))
		if err != nil {
			return nil, err
		}
		if ho, ok := out.(handledOut); ok {
			out = ho.v
		}
		return handledOut{out}, nil
	}
}

// handledOut is the output of a map item or parallel branch whose failure
// was handled (the body's on_error, the owner's continue or any_success),
// and of a map or parallel node with such a slot: the node succeeds with v,
// and the run ends partial.
// It never leaves the engine: complete() and fanOut unwrap it.
type handledOut struct{ v any }

// errorEntry is a failed slot's entry in a map or parallel node's output
// (the body's on_error: continue, or the owner's parallel_failure_mode:
// continue), as the routed-chain specification gives it: {"error": str(e)}.
func errorEntry(err error) map[string]any { return map[string]any{"error": err.Error()} }

// execMap fans the map body out over items_path, bounded by max_concurrency.
func (r *run) execMap(ctx context.Context, i int, input any, fs *scope) (any, error) {
	nd := &r.chain.Nodes[i]
	v, err := r.graph.Items[i].Eval(fs, r.strict)
	if err != nil {
		return nil, fmt.Errorf("items_path: %w", err)
	}
	// One rule for every shape: a list fans out item by item, null (a
	// missing path) is no items, and any other value (a number, a string,
	// an object) is one item.
	var items []any
	switch v := v.(type) {
	case []any:
		items = v
	case nil:
	default:
		items = []any{v}
	}
	if max := r.engine.opts.Limits.MaxMapItems; len(items) > max {
		return nil, r.overWith(chain.BudgetMapItems, int64(max), fmt.Sprintf("items_path %q gave %d items, over the limit of %d", nd.ItemsPath, len(items), max))
	}
	body := r.graph.Idx[nd.MapNode]
	total := len(items)
	calls := make([]func(context.Context) (any, error), total)
	for k := range items {
		k := k
		calls[k] = func(ctx context.Context) (any, error) {
			return r.execAttached(ctx, body, fs, items[k], &k, nil)
		}
	}
	var done atomic.Int64
	progress := func() {
		n := done.Add(1)
		r.emit(Event{NodeID: nd.ID, Phase: PhaseProgress, Progress: map[string]any{"done": float64(n), "total": float64(total)}})
	}
	ids := make([]string, total)
	for k := range ids {
		ids[k] = fmt.Sprintf("%s[%d]", nd.ID, k)
	}
	return r.fanOut(ctx, nd, calls, ids, progress)
}

// execParallel runs the parallel node's branches at once.
func (r *run) execParallel(ctx context.Context, i int, input any, fs *scope) (any, error) {
	nd := &r.chain.Nodes[i]
	calls := make([]func(context.Context) (any, error), len(nd.Branches))
	for k, b := range nd.Branches {
		j := r.graph.Idx[b]
		calls[k] = func(ctx context.Context) (any, error) {
			return r.execAttached(ctx, j, fs, input, nil, nil)
		}
	}
	return r.fanOut(ctx, nd, calls, nd.Branches, nil)
}

// fanKey carries a map or parallel node's pause state (*fanState) to its
// fan-out.
type fanKey struct{}

// fanOut runs calls concurrently (bounded) and combines their results in
// order according to the node's parallel_failure_mode. ids are the slots'
// pause ids: a slot that finished before a pause keeps its output, one still
// waiting for an answer stays paused, and one answered runs with its answer.
func (r *run) fanOut(ctx context.Context, nd *chain.Node, calls []func(context.Context) (any, error), ids []string, progress func()) (any, error) {
	n := len(calls)
	if n == 0 {
		return []any{}, nil
	}
	fan, _ := ctx.Value(fanKey{}).(*fanState)
	paused := make([]*pausedErr, n) // slots that paused (or stay paused)
	fresh := make([]bool, n)        // slots that finished in this attempt
	mode := nd.FailureModeOrDefault()
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	outs := make([]any, n)
	errs := make([]error, n)
	conc := min(n, r.sched.maxConc)
	var next atomic.Int64
	var wg sync.WaitGroup
	// The items' outputs are held until the node's output replaces them.
	var held atomic.Int64
	defer func() { r.chargeOutput(-held.Load(), 0) }()
	sizeLimit := r.engine.opts.Limits.MaxOutputBytes
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= n || fctx.Err() != nil {
					return
				}
				if d, ok := fan.slot(k); ok {
					outs[k] = d.Output
					if d.Handled {
						outs[k] = handledOut{d.Output}
					}
					continue
				}
				if fan.blocked(ids[k]) {
					paused[k] = &pausedErr{}
					continue
				}
				outs[k], errs[k] = calls[k](fan.ctxFor(fctx, ids[k]))
				if errs[k] != nil && isPause(errs[k]) {
					slot := k
					if ie, ok := tool.IsInterrupt(errs[k]); ok {
						paused[k] = &pausedErr{pauses: []slotPause{{id: ids[k], prompt: ie.Prompt, slot: &slot}}}
					} else {
						var pe *pausedErr
						errors.As(errs[k], &pe)
						paused[k] = pe.prefixed(ids[k], &slot)
					}
					errs[k] = nil
					continue
				}
				if errs[k] != nil && mode == chain.FailContinue {
					// continue collects: the failure is the slot's entry,
					// handled, so the node succeeds and the run ends partial.
					outs[k], errs[k] = handledOut{errorEntry(errs[k])}, nil
				}
				fresh[k] = errs[k] == nil
				if errs[k] == nil {
					sz := valueSize(outs[k], sizeLimit)
					held.Add(sz)
					r.chargeOutput(sz, sz) // its done event
				}
				if errs[k] != nil && mode == chain.FailFast {
					cancel(fmt.Errorf("cancelled: sibling %d failed", k))
				}
				if progress != nil {
					progress()
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	var pe *pausedErr
	for k := range paused {
		if paused[k] == nil {
			continue
		}
		if pe == nil {
			pe = &pausedErr{}
		}
		pe.pauses = append(pe.pauses, paused[k].pauses...)
	}
	label := "branch"
	if nd.Kind == chain.KindMap {
		label = "item"
	}
	partial := false
	handled := make([]bool, n)
	for k, o := range outs {
		if ho, ok := o.(handledOut); ok {
			outs[k], partial, handled[k] = ho.v, true, true
		}
	}
	var failed []int
	for k, err := range errs {
		if err != nil {
			failed = append(failed, k)
		}
	}
	if pe != nil && (len(failed) == 0 || mode == chain.FailAnySuccess) {
		// Slots wait for answers: the node pauses, keeping what finished.
		for k := range outs {
			if fresh[k] {
				pe.done = append(pe.done, SlotOutput{Slot: k, Output: outs[k], Handled: handled[k]})
			}
		}
		return nil, pe
	}
	switch mode {
	case chain.FailFast:
		for _, k := range failed {
			if !errors.Is(errs[k], context.Canceled) {
				return nil, fmt.Errorf("%s %d failed (fail_fast): %w", label, k, errs[k])
			}
		}
		if len(failed) > 0 {
			return nil, fmt.Errorf("%s %d failed (fail_fast): %w", label, failed[0], errs[failed[0]])
		}
	case chain.FailAnySuccess:
		if len(failed) == n {
			return nil, fmt.Errorf("every %s failed (any_success); last error: %w", label, errs[n-1])
		}
		if len(failed) > 0 {
			// The failures are the price any_success accepts: filtered
			// out, and the run ends partial rather than completed.
			ok := make([]any, 0, n-len(failed))
			for k := range outs {
				if errs[k] == nil {
					ok = append(ok, outs[k])
				}
			}
			outs, partial = ok, true
		}
	}
	// continue: every failure became an {"error": …} entry, collected above.
	if partial {
		return handledOut{outs}, nil
	}
	return outs, nil
}

func (r *run) startHandler(h, from int, errScope map[string]any) {
	if r.rerun.single() { // a node run alone: its handler is downstream of it
		return
	}
	if r.nodes.handlerErr == nil {
		r.nodes.handlerErr = map[int]map[string]any{}
	}
	r.nodes.handlerErr[h] = errScope
	switch r.nodes.status[h] {
	case nsReady, nsRunning, nsWaitDeps, nsPaused:
		r.nodes.loopFrom[h] = from
		return
	}
	r.nodes.activators[h] = append(r.nodes.activators[h][:0], from)
	r.nodes.status[h] = nsReady // handlers do not wait for data dependencies
	r.sched.queue.push(h)
}

func (r *run) failRouting(i int, err error) {
	var cyc *ChainCycleError
	code := CodeRouting
	edge := ""
	if errors.As(err, &cyc) {
		code, edge = CodeCycle, cyc.EdgeID
	}
	r.fail(&RunError{Code: code, Message: err.Error(), NodeID: r.chain.Nodes[i].ID, EdgeID: edge}, err)
}

// applySetState evaluates set_state over the node's output and replaces the
// state map (never mutating the old one, which workers may be reading).
func (r *run) applySetState(i int, out any) (map[string]any, error) {
	ss := r.graph.SetState[i]
	if len(ss) == 0 {
		return nil, nil
	}
	sc := &scope{base: &r.scope, output: out, hasOut: true}
	writes := make(map[string]any, len(ss))
	for _, ne := range ss {
		v, err := ne.Expr.Eval(sc, r.strict)
		if err != nil {
			return nil, fmt.Errorf("set_state.%s: %w", ne.Key, err)
		}
		writes[ne.Key] = v
	}
	r.scope.writeState(writes)
	return writes, nil
}

// runSkill runs a skill's sub-chain, checked by the host as the runtime meets
// it (its latest version may differ from the one the run was checked with).
func (r *run) runSkill(ctx context.Context, c *chain.Chain, input map[string]any) (*Result, error) {
	p, err := r.engine.compile(ctx, c)
	if err != nil {
		return nil, err
	}
	return r.engine.Run(ctx, p, input, RunOptions{ParentRunID: r.id, depth: r.depth + 1})
}
