package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// envNameFlag collects --allow-proc-env names, refusing at start the ones
// proc refuses always (a flag that could never take effect is a mistake).
type envNameFlag []string

func (l *envNameFlag) String() string { return strings.Join(*l, ",") }
func (l *envNameFlag) Set(v string) error {
	if v == "" || strings.ContainsAny(v, "=\x00") {
		return fmt.Errorf("%q is not an environment variable name", v)
	}
	if why := builtin.LoaderEnv(v); why != "" {
		return fmt.Errorf("%s is never allowed: %s", v, why)
	}
	*l = append(*l, v)
	return nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	input := fs.String("input", "", "the run's initial input, a `JSON` object or @FILE (default: the chain's sample_input, else {})")
	asJSON := fs.Bool("json", false, "print one JSON object per line: each event, then the result")
	workspace := fs.String("workspace", "", "let read_file/write_file use the folder `DIR` (default: file access disabled)")
	var allowProc listFlag
	fs.Var(&allowProc, "allow-proc", "let proc nodes run the executable `NAME` (repeatable; default: none)")
	var allowProcEnv envNameFlag
	fs.Var(&allowProcEnv, "allow-proc-env", "let proc nodes set the environment variable `NAME` (repeatable; default: none; LD_* and other loader variables never)")
	var answers listFlag
	fs.Var(&answers, "answer", "`JSON` value to resume the run with when it pauses at an interrupt (repeatable, used in order)")
	allowPrivate := fs.Bool("http-allow-private", false, "let the http tool reach loopback and private addresses")
	budgets := registerBudgets(fs)
	codeOpts := registerCode(fs)
	fs.Usage = func() {
		printUsage(fs, "studio run FILE [--input JSON] [--answer JSON]... [--json] [flags]",
			"Runs a chain (studio format or an A2E chain/req) headless, printing each event as it\n"+
				"happens, then the result. Without --input the run starts from the chain's sample_input\n"+
				"(an A2E request's initial_input), or {} when it has none. Skill nodes call the chains\n"+
				"saved as *.json in the same folder, by name.\n\n"+
				"Exit status: 0 completed or partial, 1 invalid chain or failed run, 2 usage,\n"+
				"3 paused at an interrupt (answer it with --answer), 4 cancelled or timed out.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, args, "FILE") {
		return exitUsage
	}
	exprBudget, tplBudget, err := budgets.values()
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	if err := codeOpts.check(); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	path := args[0]
	c, req, err := loadDocument(path)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return exitFailed
	}
	inputSet := false
	fs.Visit(func(f *flag.Flag) { inputSet = inputSet || f.Name == "input" })
	in, from, err := runInput(*input, inputSet, c, req)
	if err != nil {
		fmt.Fprintf(stderr, "--input: %v\n", err)
		return exitUsage
	}
	if from != "" && !*asJSON {
		fmt.Fprintf(stdout, "input (%s; --input replaces it): %s\n", from, compact(in, 200))
	}

	reg := engine.NewRegistry()
	reg.SetScoped(builtin.Scoped...)
	reg.SetContained(builtin.Contained...)
	for n, c := range builtin.Checks(builtin.Options{HTTPAllowPrivate: *allowPrivate}) {
		reg.SetCheck(n, c)
	}
	codeRunner, closeCode, err := codeOpts.runner(false)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer closeCode()
	reg.RegisterAll(builtin.Tools(builtin.Options{Workspace: *workspace, ProcAllow: allowProc, ProcAllowEnv: allowProcEnv, HTTPAllowPrivate: *allowPrivate, TemplateBudget: tplBudget, Code: codeRunner}))
	printer := &eventPrinter{w: stdout, json: *asJSON}
	resolve := folderResolver(path)
	env := newLocalEnv(reg, budgets.limits, resolve)
	eng := engine.New(engine.Options{
		Registry:   reg,
		Limits:     budgets.limits,
		Sink:       printer,
		ExprBudget: exprBudget,
		Chains: func(_ context.Context, name string) (*chain.Chain, error) {
			if c, ok := resolve(name); ok {
				return c, nil
			}
			return nil, fmt.Errorf("no chain named %q next to %s", name, path)
		},
		Compile: env.compile,
	})
	plan, _ := env.compile(ctx, c) // a chain with errors runs as refused, and says why
	res, err := eng.Run(ctx, plan, in, engine.RunOptions{})
	for err == nil && res.Status == chain.StatusPaused && len(answers) > 0 {
		var v any
		if jerr := json.Unmarshal([]byte(answers[0]), &v); jerr != nil {
			fmt.Fprintf(stderr, "--answer %s: not JSON: %v\n", answers[0], jerr)
			return exitUsage
		}
		answers = answers[1:]
		if !*asJSON {
			fmt.Fprintf(stdout, "resuming %s with %s\n", res.Pending[0].PauseID, compact(v, 120))
		}
		// Each --answer answers the oldest pause still pending.
		res, err = eng.Resume(ctx, res.RunID, &engine.ResumeValue{Value: v}, nil, engine.ResumeOptions{PauseID: res.Pending[0].PauseID})
	}
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	printer.result(res)
	switch res.Status {
	case chain.StatusCompleted, chain.StatusPartial:
		return exitOK
	case chain.StatusPaused:
		return exitPaused
	case chain.StatusCancelled, chain.StatusTimedOut:
		return exitStopped
	}
	return exitFailed
}

func loadDocument(path string) (*chain.Chain, *chain.Request, error) {
	data, err := readLimited(path, int64(chain.DefaultLimits.MaxDocumentBytes))
	if err != nil {
		return nil, nil, err
	}
	return chain.DecodeDocument(data, chain.Limits{})
}

// runInput picks the run's input: an explicit --input wins; without one an
// A2E request's initial_input, else the chain's sample_input, else {}. from
// names where a default came from ("" for --input or {}).
func runInput(flagValue string, set bool, c *chain.Chain, req *chain.Request) (map[string]any, string, error) {
	if set {
		in, err := parseInput(flagValue)
		if err != nil {
			return nil, "", err
		}
		// An empty --input on a request keeps its initial_input, as before.
		if req != nil && len(in) == 0 && req.InitialInput != nil {
			return req.InitialInput, "", nil
		}
		return in, "", nil
	}
	switch {
	case req != nil && req.InitialInput != nil:
		return req.InitialInput, "the request's initial_input", nil
	case len(c.SampleInput) > 0:
		// A copy: the run must not alias the chain's document.
		b, err := json.Marshal(c.SampleInput)
		if err != nil {
			return nil, "", err
		}
		var in map[string]any
		if err := json.Unmarshal(b, &in); err != nil {
			return nil, "", err
		}
		return in, "the chain's sample_input", nil
	}
	return map[string]any{}, "", nil
}

func parseInput(s string) (map[string]any, error) {
	if strings.HasPrefix(s, "@") {
		b, err := readLimited(s[1:], 16<<20)
		if err != nil {
			return nil, err
		}
		s = string(b)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// folderResolver finds sub-chains by name among the *.json chain files next
// to path. Files that do not decode are ignored.
func folderResolver(path string) func(name string) (*chain.Chain, bool) {
	var once sync.Once
	byName := map[string]*chain.Chain{}
	return func(name string) (*chain.Chain, bool) {
		once.Do(func() {
			files, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.json"))
			for _, f := range files {
				if c, err := loadChain(f); err == nil && c.Name != "" {
					byName[c.Name] = c
				}
			}
		})
		c, ok := byName[name]
		return c, ok
	}
}

// eventPrinter prints events as they happen.
type eventPrinter struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
}

func (p *eventPrinter) Emit(ev engine.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		b, _ := json.Marshal(struct {
			Type string `json:"type"`
			engine.Event
		}{"event", ev})
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	line := fmt.Sprintf("%s #%-4d %-8s %s", ev.Time.Format("15:04:05.000"), ev.Seq, ev.Phase, ev.NodeID)
	if ev.Item != nil {
		line += fmt.Sprintf("[%d]", *ev.Item)
	}
	if ev.Attempt > 1 {
		line += fmt.Sprintf(" attempt %d", ev.Attempt)
	}
	if ev.Matched != "" {
		line += " matched " + ev.Matched
	}
	switch {
	case ev.Error != "":
		line += "  error: " + ev.Error
	case ev.Reason != "":
		line += "  (" + ev.Reason + ")"
	}
	if ev.Phase == engine.PhaseDone && ev.Output != nil {
		line += "  " + compact(ev.Output, 120)
	}
	if ev.Progress != nil {
		line += "  " + compact(ev.Progress, 80)
	}
	if ev.Prompt != nil {
		line += "  prompt: " + compact(ev.Prompt, 120)
	}
	fmt.Fprintln(p.w, line)
}

func (p *eventPrinter) result(res *engine.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := struct {
		Type        string           `json:"type"`
		RunID       string           `json:"run_id"`
		Status      chain.RunStatus  `json:"status"`
		Outputs     map[string]any   `json:"outputs"`
		FinalOutput any              `json:"final_output"`
		Error       *engine.RunError `json:"error"`
		DurationMS  int64            `json:"duration_ms"`
		NodesRun    int              `json:"nodes_run"`
		Pending     []engine.Pending `json:"pending,omitempty"`
	}{"result", res.RunID, res.Status, res.Outputs, res.FinalOutput, res.Error, res.DurationMS, res.NodesRun, res.Pending}
	if p.json {
		b, _ := json.Marshal(out)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	fmt.Fprintf(p.w, "\nrun %s %s in %d ms (%d nodes run)\n", res.RunID, res.Status, res.DurationMS, res.NodesRun)
	if res.Error != nil {
		fmt.Fprintf(p.w, "error [%s]: %s\n", res.Error.Code, res.Error.Message)
		if b, ok := res.Error.Details["budget"]; ok {
			fmt.Fprintf(p.w, "budget: %v (limit %v)\n", b, res.Error.Details["limit"])
		}
		for _, is := range res.Error.Issues {
			fmt.Fprintf(p.w, "  %s\n", is.String())
		}
	}
	for _, pd := range res.Pending {
		fmt.Fprintf(p.w, "waiting at %s: %s\n", pd.NodeID, compact(pd.Prompt, 200))
	}
	if len(res.Pending) > 0 {
		// A headless run lives as long as the command: answers go in up front.
		fmt.Fprintln(p.w, "to continue, run it again with --answer JSON (one per interrupt, in order)")
	}
	if res.FinalOutput == nil && res.Status != chain.StatusCompleted && res.Status != chain.StatusPartial {
		return // "final_output: null" after a failure or a pause says nothing
	}
	b, _ := json.MarshalIndent(res.FinalOutput, "", "  ")
	fmt.Fprintf(p.w, "final_output: %s\n", b)
}

func compact(v any, max int) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// localEnv is what `studio run` and `studio a2e` check a chain against: the
// tools they registered, the sub-chains beside it, their limits.
type localEnv struct{ vo chain.ValidateOptions }

func newLocalEnv(reg *engine.Registry, limits chain.Limits, resolve func(string) (*chain.Chain, bool)) localEnv {
	return localEnv{chain.ValidateOptions{Limits: limits, Tools: reg.Has, ToolUnavailable: reg.Unavailable,
		Schemas: reg.NodeSchemas(nil), Check: reg.NodeCheck, Resolve: resolve}}
}

// compile is engine.Options.Compile for these hosts.
func (l localEnv) compile(_ context.Context, c *chain.Chain) (*chain.Plan, error) {
	return chain.Compile(c, l.vo)
}
