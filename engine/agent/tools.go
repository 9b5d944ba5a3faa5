package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Limits and defaults of a model agent's tool loop.
const (
	MaxTools             = 64   // tools one agent may declare
	DefaultMaxSteps      = 8    // model turns, when max_steps is unset
	MaxMaxSteps          = 100  // the largest max_steps
	DefaultMaxToolCalls  = 32   // tool calls in one run of the agent, when max_tool_calls is unset
	MaxMaxToolCalls      = 1000 // the largest max_tool_calls
	MaxRepair            = 5    // the largest repair
	MaxToolResultBytes   = 64 << 10
	maxParallelToolCalls = 4 // calls of one turn run at once
	ApprovalRequired     = "required"
)

// toolNameRE is what every provider accepts as a function name.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ToolSpec is one entry of an agent's tools: a studio tool or a saved chain
// (called as a skill) the model may call.
type ToolSpec struct {
	Tool  string `yaml:"tool,omitempty" json:"tool,omitempty"`
	Chain string `yaml:"chain,omitempty" json:"chain,omitempty"`
	// Name is the name the model calls it by (default: the tool's or the
	// chain's name).
	Name        string `yaml:"name,omitempty" json:"name,omitempty"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Input is static input merged over the model's arguments (it wins):
	// what the model must not choose (an http method, a URL).
	Input map[string]any `yaml:"input,omitempty" json:"input,omitempty"`
	// InputSchema replaces the schema offered to the model (default: the
	// tool's declared input schema, or the chain's).
	InputSchema any `yaml:"input_schema,omitempty" json:"input_schema,omitempty"`
	// Approval "required" pauses the run for a person before each call.
	Approval       string     `yaml:"approval,omitempty" json:"approval,omitempty"`
	TimeoutSeconds float64    `yaml:"timeout_seconds,omitempty" json:"timeout_seconds,omitempty"`
	Retry          *RetrySpec `yaml:"retry,omitempty" json:"retry,omitempty"`
}

// Kind is "tool" or "chain".
func (t *ToolSpec) Kind() string {
	if t.Chain != "" {
		return "chain"
	}
	return "tool"
}

// Target is the studio tool or the chain the entry calls.
func (t *ToolSpec) Target() string {
	if t.Chain != "" {
		return t.Chain
	}
	return t.Tool
}

// CallName is the name the model calls the entry by. An MCP tool's id
// (mcp:<server>/<tool>) has characters no provider accepts in a function
// name, so by default it is called <server>_<tool>, with every other
// character made '_' (set name: when that is too long or ambiguous).
func (t *ToolSpec) CallName() string {
	if t.Name != "" {
		return t.Name
	}
	if rest, ok := strings.CutPrefix(t.Tool, mcpPrefix); ok && t.Chain == "" {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
				return r
			}
			return '_'
		}, rest)
	}
	return t.Target()
}

// mcpPrefix starts the ids of MCP servers' tools (engine/mcp.IDPrefix; the
// agent package does not import the MCP client).
const mcpPrefix = "mcp:"

// Gated reports whether each call waits for a person's approval.
func (t *ToolSpec) Gated() bool { return t.Approval == ApprovalRequired }

// MaxStepsOrDefault is the number of model turns the agent may take.
func (d *Definition) MaxStepsOrDefault() int {
	if d.MaxSteps == nil {
		return DefaultMaxSteps
	}
	return int(*d.MaxSteps)
}

// MaxToolCallsOrDefault is the number of tool calls the agent may make.
func (d *Definition) MaxToolCallsOrDefault() int {
	if d.MaxToolCalls == nil {
		return DefaultMaxToolCalls
	}
	return int(*d.MaxToolCalls)
}

// RepairOrDefault is how many times a reply failing the output schema is
// asked for again.
func (d *Definition) RepairOrDefault() int {
	if d.Repair == nil {
		return 0
	}
	return int(*d.Repair)
}

// ToolByName finds the entry the model called.
func (d *Definition) ToolByName(name string) (*ToolSpec, bool) {
	for i := range d.Tools {
		if d.Tools[i].CallName() == name {
			return &d.Tools[i], true
		}
	}
	return nil, false
}

// checkLoop validates tools, max_steps, max_tool_calls and repair.
func (d *Definition) checkLoop() []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	model := d.Model != nil
	if !model {
		for _, f := range []struct {
			set  bool
			name string
		}{{len(d.Tools) > 0, "tools"}, {d.MaxSteps != nil, "max_steps"}, {d.MaxToolCalls != nil, "max_tool_calls"}, {d.Repair != nil, "repair"}} {
			if f.set {
				add("%s is used only by model agents (this agent has no model)", f.name)
			}
		}
	}
	if d.MaxSteps != nil && (*d.MaxSteps < 1 || *d.MaxSteps > MaxMaxSteps) {
		add("max_steps is %d; it must be between 1 and %d (default %d)", *d.MaxSteps, MaxMaxSteps, DefaultMaxSteps)
	}
	if d.MaxToolCalls != nil && (*d.MaxToolCalls < 0 || *d.MaxToolCalls > MaxMaxToolCalls) {
		add("max_tool_calls is %d; it must be between 0 and %d (default %d)", *d.MaxToolCalls, MaxMaxToolCalls, DefaultMaxToolCalls)
	}
	if d.Repair != nil && (*d.Repair < 0 || *d.Repair > MaxRepair) {
		add("repair is %d; it must be between 0 and %d", *d.Repair, MaxRepair)
	}
	if d.Repair != nil && *d.Repair > 0 && d.Spec.OutputSchema == nil {
		add("repair asks again for a reply that fails spec.output_schema, but the agent declares none")
	}
	if d.Model != nil && d.Model.MaxTokens < 0 {
		add("model.max_tokens is %d; it must be ≥ 0", d.Model.MaxTokens)
	}
	if len(d.Tools) > MaxTools {
		add("tools lists %d tools, over the limit of %d", len(d.Tools), MaxTools)
	}
	seen := map[string]int{}
	for i := range d.Tools {
		t := &d.Tools[i]
		at := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Tool == "" && t.Chain == "":
			add("%s: name a studio tool (tool:) or a saved chain (chain:)", at)
			continue
		case t.Tool != "" && t.Chain != "":
			add("%s: tool and chain are both set; an entry calls one of them", at)
			continue
		}
		name := t.CallName()
		if !toolNameRE.MatchString(name) {
			add("%s: %q is not a name a model can call (letters, digits, _ and -, at most 64); set name:", at, name)
		} else if j, dup := seen[name]; dup {
			add("%s: the name %q is already used by tools[%d]; set name: to tell them apart", at, name, j)
		} else {
			seen[name] = i
		}
		switch t.Approval {
		case "", ApprovalRequired:
		default:
			add("%s (%s).approval %q is not valid (required, or leave it out)", at, name, t.Approval)
		}
		if t.TimeoutSeconds < 0 {
			add("%s (%s).timeout_seconds is %g; it must be ≥ 0", at, name, t.TimeoutSeconds)
		}
		if rt := t.Retry; rt != nil {
			if rt.MaxAttempts < 1 || rt.MaxAttempts > 10 {
				add("%s (%s).retry.max_attempts is %d; it must be between 1 and 10", at, name, rt.MaxAttempts)
			}
			switch rt.Backoff {
			case "", "fixed", "exponential":
			default:
				add("%s (%s).retry.backoff %q is not valid (fixed or exponential)", at, name, rt.Backoff)
			}
			if rt.InitialDelaySeconds < 0 || rt.InitialDelaySeconds > 60 {
				add("%s (%s).retry.initial_delay_seconds is %g; it must be between 0 and 60", at, name, rt.InitialDelaySeconds)
			}
		}
		var err error
		if t.Input, err = jsonMap(t.Input); err != nil {
			add("%s (%s).input: %v", at, name, err)
		}
		if t.InputSchema != nil {
			v, err := jsonValue(t.InputSchema)
			if err != nil {
				add("%s (%s).input_schema: %v", at, name, err)
			} else if m, ok := v.(map[string]any); !ok || (m["type"] != nil && m["type"] != "object") {
				add("%s (%s).input_schema must be an object schema (type: object): a tool's arguments are a JSON object", at, name)
			} else {
				t.InputSchema = m
			}
		}
	}
	return errs
}

// checkTools reports tools entries that name a studio tool this host lacks.
func (d *Definition) checkTools(exists func(string) bool) []string {
	var errs []string
	for i := range d.Tools {
		t := &d.Tools[i]
		if t.Tool != "" && !exists(t.Tool) {
			errs = append(errs, fmt.Sprintf("%s: tools[%d]: tool %q does not exist on this host", d.where(), i, t.Tool))
		}
	}
	return errs
}

// offeredSchema is the object schema offered for a tool: the entry's own,
// else the declared one, with the static input's keys removed (the model
// does not choose them).
func offeredSchema(t *ToolSpec, declared map[string]any) json.RawMessage {
	s := declared
	if m, ok := t.InputSchema.(map[string]any); ok {
		s = m
	}
	out := map[string]any{"type": "object"}
	for k, v := range s {
		out[k] = v
	}
	if props, ok := out["properties"].(map[string]any); ok && len(t.Input) > 0 {
		p := map[string]any{}
		for k, v := range props {
			if _, fixed := t.Input[k]; !fixed {
				p[k] = v
			}
		}
		out["properties"] = p
		if req, ok := out["required"].([]any); ok {
			out["required"] = slices.DeleteFunc(slices.Clone(req), func(r any) bool {
				s, _ := r.(string)
				_, fixed := t.Input[s]
				return fixed
			})
		}
	}
	if _, ok := out["properties"]; !ok {
		out["properties"] = map[string]any{}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

// describeTool is the description offered to the model.
func describeTool(t *ToolSpec, declared string) string {
	if d := strings.TrimSpace(t.Description); d != "" {
		return d
	}
	if declared != "" {
		return declared
	}
	if t.Chain != "" {
		return "Runs the saved chain " + t.Chain + " with the arguments as its input and returns its output."
	}
	return "Runs the studio tool " + t.Tool + "."
}
