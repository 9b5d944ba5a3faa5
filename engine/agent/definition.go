package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/redact"
	"go.yaml.in/yaml/v3"
)

// Limits on agent files.
const (
	MaxFileSize  = 1 << 20 // bytes per *.agent.yaml file
	MaxAgents    = 1000    // agents per folder
	MaxRules     = 100     // on_complete rules per agent
	FileSuffix   = ".agent.yaml"
	maxNameBytes = 64
)

// Chain modes.
const (
	ModeSequential = "sequential"
	ModeParallel   = "parallel"
)

// Error policies of a rule; any other value names a handler agent.
const (
	OnErrorStop     = "stop"
	OnErrorContinue = "continue"
)

// DefaultMaxDepth bounds how deep a chain may expand when max_depth is unset.
const DefaultMaxDepth = 5

// InputReadsSteps says whether a rule's input may read `steps` and `when`
// (allowed under mode sequential, where the engine gives a sequential link's
// input_map the links already run; refused under parallel, where no link
// has run yet when the others start).
var InputReadsSteps = true

// DefaultInput is a rule's input when it declares none.
const DefaultInput = "{{ output.answer }}"

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Definition is one agent, as written in its YAML file.
type Definition struct {
	Name         string         `yaml:"name" json:"name"`
	Description  string         `yaml:"description,omitempty" json:"description,omitempty"`
	Model        *Model         `yaml:"model,omitempty" json:"model,omitempty"`
	SystemPrompt string         `yaml:"system_prompt,omitempty" json:"system_prompt,omitempty"`
	Prompt       string         `yaml:"prompt,omitempty" json:"prompt,omitempty"`
	Tool         string         `yaml:"tool,omitempty" json:"tool,omitempty"`   // call a studio tool instead of a model
	Chain        string         `yaml:"chain,omitempty" json:"chain,omitempty"` // run a saved chain instead of a model
	Input        map[string]any `yaml:"input,omitempty" json:"input,omitempty"` // static input of a tool: / chain: agent
	// Tools are what a model agent may call (tools.go); MaxSteps and
	// MaxToolCalls bound the loop, Repair the retries of a reply that
	// fails the output schema.
	Tools        []ToolSpec `yaml:"tools,omitempty" json:"tools,omitempty"`
	MaxSteps     *Int       `yaml:"max_steps,omitempty" json:"max_steps,omitempty"`
	MaxToolCalls *Int       `yaml:"max_tool_calls,omitempty" json:"max_tool_calls,omitempty"`
	Repair       *Int       `yaml:"repair,omitempty" json:"repair,omitempty"`
	// Memory keeps the agent's conversations by a session key (memory.go).
	Memory *Memory `yaml:"memory,omitempty" json:"memory,omitempty"`
	Spec   Spec    `yaml:"spec,omitempty" json:"spec"`

	// File is the file the agent was loaded from ("" when built in code
	// or stored).
	File string `yaml:"-" json:"file,omitempty"`
	// Stored: the agent is kept in the store, at Version.
	Stored  bool `yaml:"-" json:"stored,omitempty"`
	Version int  `yaml:"-" json:"version,omitempty"`

	schema  *Schema
	checked bool
	// inline: defined in its node, whose chain and id scope its memory.
	inline bool
	// providersChecked: the model block was checked against the host's
	// providers, not only on its own.
	providersChecked bool
}

// Model is the model an agent calls and the provider that serves it.
type Model struct {
	// Provider is openai (the default: OpenAI and every OpenAI-compatible
	// server), anthropic or gemini.
	Provider string `yaml:"provider,omitempty" json:"provider,omitempty"`
	// URL is the openai endpoint or base (see Endpoint), or the base URL of
	// an anthropic or gemini server; empty is the provider's public API (or
	// an openai_compatible credential's base_url).
	URL       string `yaml:"url,omitempty" json:"url"`
	Name      string `yaml:"name" json:"name"`
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// Credential names the studio credential that holds the key, resolved
	// for each call.
	Credential  string   `yaml:"credential,omitempty" json:"credential,omitempty"`
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	// MaxTokens caps the reply (0: the provider's default).
	MaxTokens Int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	// Stream asks for the reply as it is written (default true); false for
	// a server that cannot stream.
	Stream *bool `yaml:"stream,omitempty" json:"stream,omitempty"`
	// StructuredOutput is how an output_schema is asked for: native (the
	// provider enforces it) or prompt (the schema is in the prompt and the
	// JSON is extracted from the answer). Default: native for anthropic,
	// gemini and OpenAI's own API, prompt for other OpenAI-compatible
	// servers, which may not support it.
	StructuredOutput string `yaml:"structured_output,omitempty" json:"structured_output,omitempty"`
	// API is the openai provider's wire: chat_completions (the default,
	// what compatible servers implement) or responses (OpenAI's Responses
	// API).
	API string `yaml:"api,omitempty" json:"api,omitempty"`
}

// The openai provider's APIs.
const (
	APIChatCompletions = "chat_completions"
	APIResponses       = "responses"
)

// Structured-output modes.
const (
	OutputNative = "native"
	OutputPrompt = "prompt"
)

// NativeSchema reports whether the provider, of kind k, is asked to enforce
// the output schema.
func (m *Model) NativeSchema(k llm.Kind) bool {
	switch m.StructuredOutput {
	case OutputNative:
		return true
	case OutputPrompt:
		return false
	}
	if !k.OpenAIWire {
		return true
	}
	u, err := neturl.Parse(m.URL)
	return err == nil && u.Hostname() == "api.openai.com"
}

// Streams reports whether the model's replies are streamed.
func (m *Model) Streams() bool { return m.Stream == nil || *m.Stream }

// ProviderOrDefault is the model's provider, openai when none is named.
func (m *Model) ProviderOrDefault() string {
	if m.Provider == "" {
		return DefaultProvider
	}
	return m.Provider
}

// MarshalJSON shows the model with its URL redacted (no user info, no query
// values): definitions are served by the API, and a URL may hold credentials.
func (m Model) MarshalJSON() ([]byte, error) {
	type plain Model
	p := plain(m)
	p.URL = redact.URL(m.URL)
	return json.Marshal(p)
}

// Spec holds the structured-output and chaining declarations.
type Spec struct {
	OutputSchema any        `yaml:"output_schema,omitempty" json:"output_schema,omitempty"`
	Chain        *ChainSpec `yaml:"chain,omitempty" json:"chain,omitempty"`
}

// ChainSpec is spec.chain: which agents fire when this one completes.
type ChainSpec struct {
	Mode       string `yaml:"mode,omitempty" json:"mode,omitempty"`
	MaxDepth   *Int   `yaml:"max_depth,omitempty" json:"max_depth,omitempty"`
	OnComplete []Rule `yaml:"on_complete" json:"on_complete"`
}

// Rule is one on_complete entry.
type Rule struct {
	Agent          string     `yaml:"agent" json:"agent"`
	When           string     `yaml:"when,omitempty" json:"when,omitempty"`
	Input          string     `yaml:"input,omitempty" json:"input,omitempty"`
	Retry          *RetrySpec `yaml:"retry,omitempty" json:"retry,omitempty"`
	TimeoutSeconds float64    `yaml:"timeout_seconds,omitempty" json:"timeout_seconds,omitempty"`
	OnError        string     `yaml:"on_error,omitempty" json:"on_error,omitempty"`
	Default        bool       `yaml:"default,omitempty" json:"default,omitempty"`
}

// RetrySpec is a rule's retry policy.
type RetrySpec struct {
	MaxAttempts         Int     `yaml:"max_attempts" json:"max_attempts"`
	Backoff             string  `yaml:"backoff,omitempty" json:"backoff,omitempty"`
	InitialDelaySeconds float64 `yaml:"initial_delay_seconds,omitempty" json:"initial_delay_seconds,omitempty"`
}

// ModeOrDefault returns the chain's mode.
func (c *ChainSpec) ModeOrDefault() string {
	if c.Mode == "" {
		return ModeSequential
	}
	return c.Mode
}

// MaxDepthOrDefault returns the chain's max_depth.
func (c *ChainSpec) MaxDepthOrDefault() int {
	if c.MaxDepth == nil {
		return DefaultMaxDepth
	}
	return int(*c.MaxDepth)
}

// Int is an integer field that refuses non-integers (YAML would otherwise
// truncate 2.5 to 2).
type Int int

// UnmarshalYAML implements yaml.Unmarshaler.
func (i *Int) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return fmt.Errorf("line %d: want an integer, got %q", n.Line, n.Value)
	}
	var v int
	if err := n.Decode(&v); err != nil {
		return err
	}
	*i = Int(v)
	return nil
}

// InputOrDefault returns the rule's input template.
func (r *Rule) InputOrDefault() string {
	if strings.TrimSpace(r.Input) == "" {
		return DefaultInput
	}
	return r.Input
}

// OnErrorOrDefault returns the rule's error policy.
func (r *Rule) OnErrorOrDefault() string {
	if r.OnError == "" {
		return OnErrorStop
	}
	return r.OnError
}

// Kind says what the agent calls: "model", "tool" or "chain".
func (d *Definition) Kind() string {
	switch {
	case d.Tool != "":
		return "tool"
	case d.Chain != "":
		return "chain"
	}
	return "model"
}

// Schema returns the compiled output schema, or nil when none is declared.
func (d *Definition) Schema() *Schema { return d.schema }

// HasChain reports whether the agent declares spec.chain.
func (d *Definition) HasChain() bool { return d.Spec.Chain != nil }

// where names the agent in an error message: `agents/x.agent.yaml: agent "x"`.
func (d *Definition) where() string {
	if d.File != "" {
		return fmt.Sprintf("%s: agent %q", d.File, d.Name)
	}
	if d.Stored {
		return fmt.Sprintf("stored agent %q", d.Name)
	}
	return fmt.Sprintf("agent %q", d.Name)
}

// ParseStored reads an agent kept in the store: its source (YAML or JSON,
// as a file holds it) at a version. name is the record's: a source naming
// another agent, or none, is an error.
func ParseStored(source []byte, name string, version int) (*Definition, error) {
	d, err := Parse(source, "")
	if err != nil {
		return nil, err
	}
	if d.Name != name {
		return nil, fmt.Errorf("the definition is named %q, but it is stored as %q", d.Name, name)
	}
	d.Stored, d.Version = true, version
	return d, nil
}

// Parse reads one agent definition. file names it in errors; when the YAML
// has no name, the file's base name without ".agent.yaml" is used.
//
// Anchors and aliases are refused outright (they are what alias-expansion
// "billion laughs" documents are made of, and agents never need them), as are
// documents over MaxFileSize, several documents in one file and unknown
// fields.
//
// The definition is checked on its own: what depends on the model's
// provider is checked against the host's providers when the set is built
// (NewSet).
func Parse(data []byte, file string) (*Definition, error) {
	return parse(data, file, nil)
}

// parse is Parse checking the model block against kinds (nil: as Parse).
func parse(data []byte, file string, kinds llm.Kinds) (*Definition, error) {
	prefix := ""
	if file != "" {
		prefix = file + ": "
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%sthe file is %d bytes, over the limit of %d (1 MiB)", prefix, len(data), MaxFileSize)
	}
	// First pass: the node tree, which never expands aliases.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%sthe file is empty; an agent needs at least a name and a model, tool or chain", prefix)
		}
		return nil, fmt.Errorf("%s%s", prefix, yamlErr(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("%sthe file holds more than one YAML document (line %d); put one agent per file", prefix, extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s%s", prefix, yamlErr(err))
	}
	if err := noAliases(&root, 0); err != nil {
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	// Wrong types and unknown fields are reported with the agent and the
	// field's path, all at once.
	if errs := typeErrors(&root); len(errs) > 0 {
		where := fmt.Sprintf("agent %q", nodeName(&root, file))
		if file != "" {
			where = file + ": " + where
		}
		for i := range errs {
			errs[i] = where + ": " + errs[i]
		}
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	// Second pass: strict decoding into the definition (safe now: no aliases).
	var d Definition
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s%s", prefix, yamlErr(err))
	}
	d.File = file
	if d.Name == "" && file != "" {
		d.Name = strings.TrimSuffix(filepath.Base(file), FileSuffix)
	}
	if err := d.check(kinds); err != nil {
		return nil, err
	}
	return &d, nil
}

// nodeName is the agent's name for an error raised before decoding: its
// name field when that is a plain string, else the file's base name.
func nodeName(root *yaml.Node, file string) string {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k, v := n.Content[i], n.Content[i+1]; k.Value == "name" && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && v.Value != "" {
				return v.Value
			}
		}
	}
	return strings.TrimSuffix(filepath.Base(file), FileSuffix)
}

// yamlErr makes a YAML error friendlier: a {{ template }} left unquoted is a
// flow mapping to YAML.
func yamlErr(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if strings.Contains(msg, "!!map into string") {
		msg += ` (templates must be quoted: when: "{{ output.data.score > 7 }}")`
	}
	return msg
}

// noAliases refuses anchors, aliases (and so merge keys) anywhere in the tree.
func noAliases(n *yaml.Node, depth int) error {
	if depth > 200 {
		return fmt.Errorf("line %d: the document nests more than 200 levels deep", n.Line)
	}
	if n.Kind == yaml.AliasNode {
		return fmt.Errorf("line %d: YAML aliases (*%s) are not allowed in agent files; write the value out", n.Line, n.Value)
	}
	if n.Anchor != "" {
		return fmt.Errorf("line %d: YAML anchors (&%s) are not allowed in agent files; write the value out", n.Line, n.Anchor)
	}
	for _, c := range n.Content {
		if err := noAliases(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// check validates one definition on its own (references between agents are
// checked when the set is compiled), its model block against the provider
// kinds the host offers (nil: only what does not depend on the provider).
func (d *Definition) check(kinds llm.Kinds) error {
	errs := d.problems(kinds)
	if len(errs) == 0 {
		return nil
	}
	for i := range errs {
		errs[i] = d.where() + ": " + errs[i]
	}
	return errors.New(strings.Join(errs, "\n"))
}

// problems is what check finds, each message starting with the field it
// is about (model.name, prompt, spec.output_schema); on none the
// definition is marked checked.
func (d *Definition) problems(kinds llm.Kinds) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	var err error
	if d.Input, err = jsonMap(d.Input); err != nil {
		add("input: %v", err)
	}
	if d.Spec.OutputSchema != nil {
		if d.Spec.OutputSchema, err = jsonValue(d.Spec.OutputSchema); err != nil {
			add("spec.output_schema: %v", err)
		}
	}
	switch {
	case d.Name == "":
		add("the agent has no name")
	case len(d.Name) > maxNameBytes || !nameRE.MatchString(d.Name):
		add("name %q is not a valid agent name (letters, digits, '-' and '_', starting with a letter or digit, at most %d bytes)", d.Name, maxNameBytes)
	case chain.IsReserved(d.Name):
		add("name %q is reserved by the expression context (%s); rename the agent", d.Name, strings.Join(chain.ReservedNames, ", "))
	}
	n := 0
	if d.Model != nil {
		n++
		provider := d.Model.ProviderOrDefault()
		kind, known := kinds.Get(provider)
		if kinds != nil && !known {
			add("model.provider %q is not a provider the studio knows (%s)", d.Model.Provider, strings.Join(kinds.Names(), ", "))
		}
		if d.Model.Credential != "" && d.Model.APIKeyEnv != "" {
			add("model.credential and model.api_key_env are both set; the key comes from one of them")
		}
		// A kind with a public API (anthropic, gemini) defaults to it; an
		// openai model with a credential may take its base URL from an
		// openai_compatible one (checked when the credential is resolved).
		if d.Model.URL == "" {
			if known && kind.DefaultURL == "" && d.Model.Credential == "" {
				add("model.url is required (an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1), or a credential of type openai_compatible")
			}
		} else if !strings.HasPrefix(d.Model.URL, "http://") && !strings.HasPrefix(d.Model.URL, "https://") {
			add("model.url %q must start with http:// or https://", redact.URL(d.Model.URL))
		}
		if d.Model.Name == "" {
			add("model.name is required (the model the endpoint serves)")
		}
		switch d.Model.StructuredOutput {
		case "", OutputNative, OutputPrompt:
		default:
			add("model.structured_output %q is not valid (native or prompt)", d.Model.StructuredOutput)
		}
		switch d.Model.API {
		case "", APIChatCompletions:
		case APIResponses:
			if kinds != nil && !kind.OpenAIWire {
				add("model.api %q is an openai API; the %s provider has its own", d.Model.API, provider)
			}
		default:
			add("model.api %q is not valid (chat_completions or responses)", d.Model.API)
		}
	}
	if d.Tool != "" {
		n++
	}
	if d.Chain != "" {
		n++
	}
	switch {
	case n == 0:
		add("the agent needs one of model (an OpenAI-compatible endpoint), tool (a studio tool) or chain (a saved chain)")
	case n > 1:
		add("the agent declares more than one of model, tool and chain; choose one")
	}
	if len(d.Input) > 0 && d.Model != nil {
		add("input is used only by tool: and chain: agents")
	}
	errs = append(errs, d.checkLoop()...)
	if d.Memory != nil {
		errs = append(errs, d.Memory.problems(d.Model != nil)...)
	}
	if d.Prompt != "" {
		if _, err := parseTemplate(d.Prompt); err != nil {
			add("prompt: %v", err)
		}
	}
	if d.Spec.OutputSchema != nil {
		s, err := CompileSchema(d.Spec.OutputSchema)
		if err != nil {
			add("spec.output_schema: %v", err)
		} else {
			d.schema = s
		}
	}
	if c := d.Spec.Chain; c != nil {
		errs = append(errs, d.checkChain(c)...)
	}
	if len(errs) == 0 {
		d.checked, d.providersChecked = true, kinds != nil
	}
	return errs
}

func (d *Definition) checkChain(c *ChainSpec) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	mode := c.ModeOrDefault()
	if mode != ModeSequential && mode != ModeParallel {
		add("spec.chain.mode %q is not valid (sequential or parallel)", c.Mode)
	}
	if c.MaxDepth != nil && *c.MaxDepth < 1 {
		add("spec.chain.max_depth is %d; it must be an integer ≥ 1 (default %d)", *c.MaxDepth, DefaultMaxDepth)
	}
	if len(c.OnComplete) == 0 {
		add("spec.chain.on_complete is empty; list at least one agent to fire (or remove spec.chain)")
	}
	if len(c.OnComplete) > MaxRules {
		add("spec.chain.on_complete has %d rules, over the limit of %d", len(c.OnComplete), MaxRules)
	}
	defaults := []int{}
	seen := map[string]int{}
	for i := range c.OnComplete {
		r := &c.OnComplete[i]
		at := fmt.Sprintf("spec.chain.on_complete[%d]", i)
		if r.Agent == "" {
			add("%s: agent is required", at)
		} else if j, dup := seen[r.Agent]; dup {
			add("%s: agent %q is already listed at on_complete[%d]; each agent may appear once per chain (steps.%s would be ambiguous)", at, r.Agent, j, r.Agent)
		} else {
			seen[r.Agent] = i
		}
		if r.Default {
			defaults = append(defaults, i)
			if r.When != "" {
				add("%s (%s): default: true cannot carry a when; the default fires only when no when matched", at, r.Agent)
			}
		}
		if r.When != "" {
			e, err := parseExpr(r.When)
			if err == nil {
				// Guards are strict: a bare word is a path that never
				// exists, so the link would fail on every run.
				for _, b := range expr.BareWords(e, chain.IsReserved) {
					add("%s (%s).when %q reads %s as a path, not as the text %q: no such path exists, so the guard would fail on every run; write %s", at, r.Agent, r.When, b.Word, b.Word, b.Fix())
				}
			}
			if err != nil {
				add("%s (%s).when: %v", at, r.Agent, err)
			} else if mode == ModeParallel {
				for _, ref := range e.Refs() {
					if ref.Root == "steps" || ref.Root == "when" {
						add("%s (%s).when reads %s.%s (a sibling link's result), but mode is parallel: every guard is evaluated before any link runs, so it would always be unset; use mode: sequential", at, r.Agent, ref.Root, ref.Field)
						break
					}
				}
			}
		}
		if r.Input != "" {
			e, err := parseExpr(r.Input)
			if err != nil {
				add("%s (%s).input: %v", at, r.Agent, err)
			} else {
				for _, ref := range e.Refs() {
					if ref.Root != "steps" && ref.Root != "when" {
						continue
					}
					if mode == ModeParallel || !InputReadsSteps {
						add("%s (%s).input reads %s.%s; under mode parallel every link starts at once, so an input cannot read its siblings: use mode: sequential", at, r.Agent, ref.Root, ref.Field)
					}
					break
				}
			}
		}
		if rt := r.Retry; rt != nil {
			if rt.MaxAttempts < 1 || rt.MaxAttempts > 100 {
				add("%s (%s).retry.max_attempts is %d; it must be between 1 and 100", at, r.Agent, rt.MaxAttempts)
			}
			switch rt.Backoff {
			case "", "fixed", "exponential":
			default:
				add("%s (%s).retry.backoff %q is not valid (fixed or exponential)", at, r.Agent, rt.Backoff)
			}
			if rt.InitialDelaySeconds < 0 || rt.InitialDelaySeconds > 3600 {
				add("%s (%s).retry.initial_delay_seconds is %g; it must be between 0 and 3600", at, r.Agent, rt.InitialDelaySeconds)
			}
		}
		if r.TimeoutSeconds < 0 {
			add("%s (%s).timeout_seconds is %g; it must be ≥ 0", at, r.Agent, r.TimeoutSeconds)
		}
		if r.OnError == "abort" || r.OnError == "skip" {
			add("%s (%s).on_error %q is not valid (stop, continue or the name of an agent)", at, r.Agent, r.OnError)
		}
	}
	if len(defaults) > 1 {
		add("spec.chain.on_complete declares %d rules with default: true (on_complete[%s]); at most one is allowed", len(defaults), joinInts(defaults))
	}
	return errs
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, "], on_complete[")
}

// LoadOptions configure LoadDir and NewSet.
type LoadOptions struct {
	// Tools reports whether a studio tool exists; nil skips the check of
	// tool: agents.
	Tools func(name string) bool
	// Providers are the model provider kinds the host offers: model
	// blocks are checked against them, and the set's model agents call
	// through them. Nil skips the checks that depend on the provider (and
	// leaves model agents nothing to call).
	Providers llm.Kinds
	// URLRefused says why the host will refuse model calls to a URL,
	// naming the flag that allows them ("": it will not); nil: it never
	// does. Validation warns of it for agents defined in their nodes.
	URLRefused func(url string) string
}

// LoadDir loads every *.agent.yaml file in dir (not recursive) and compiles
// the set. A folder that does not exist is an empty set, not an error. Every
// problem found is reported, each naming its file.
func LoadDir(dir string, opts LoadOptions) (*Set, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return NewSet(nil, opts)
		}
		return nil, fmt.Errorf("agents: %w", err)
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), FileSuffix) && !e.IsDir() {
			files = append(files, e.Name())
		}
	}
	sort.Strings(files)
	if len(files) > MaxAgents {
		return nil, fmt.Errorf("agents: %s holds %d agent files, over the limit of %d", dir, len(files), MaxAgents)
	}
	var defs []*Definition
	var errs []error
	for _, f := range files {
		path := filepath.Join(dir, f)
		data, err := readCapped(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := parse(data, path, opts.Providers)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		defs = append(defs, d)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("agents: %w", errors.Join(errs...))
	}
	s, err := NewSet(defs, opts)
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	return s, nil
}

func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: the file is over the limit of %d bytes (1 MiB)", path, MaxFileSize)
	}
	return data, nil
}
