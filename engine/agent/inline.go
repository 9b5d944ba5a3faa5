package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/tool"
	"go.yaml.in/yaml/v3"
)

// An agent defined in its node: an agent node without a name whose config
// holds a model (config.model) is that agent, built in the designer and
// saved, versioned and exported with its chain. Its config has the fields
// of an agent file (definition.go) except name, description, tool:, chain:
// and spec.chain, with output_schema at the top: model, system_prompt,
// prompt, output_schema, repair, max_steps, max_tool_calls, tools and
// memory.

// Config keys of an agent defined in its node.
const (
	configModel        = "model"
	configOutputSchema = "output_schema"
)

// inlineKeys are the config keys an agent defined in its node may set.
var inlineKeys = []string{configModel, "system_prompt", "prompt", configOutputSchema, "repair", "max_steps", "max_tool_calls", "tools", "memory"}

// Defined reports whether node nd defines its agent in its config (rather
// than naming a loaded or stored one).
func Defined(nd *chain.Node) bool {
	if nd == nil || nd.Kind != chain.KindAgent || nd.Name != "" {
		return false
	}
	_, ok := nd.Config[configModel]
	return ok
}

// DefinedAgent decodes and checks the agent node nd defines (Defined) with
// the host's providers (nil: any provider name). Each problem names its
// field as the node has it (config.model.name); with problems the
// definition is nil.
func DefinedAgent(nd *chain.Node, kinds llm.Kinds) (*Definition, []tool.Problem) {
	var probs []tool.Problem
	fields := map[string]any{}
	for k, v := range nd.Config {
		switch {
		case k == configAgent:
			probs = append(probs, tool.Problem{Field: "config.agent", Message: "config.agent names an agent, but this node defines its own (config.model): remove one of them"})
		case k == configOutputSchema:
			fields["spec"] = map[string]any{"output_schema": v}
		case k == configContinu:
		case !slices.Contains(inlineKeys, k):
			probs = append(probs, tool.Problem{Field: "config." + k, Message: fmt.Sprintf("config.%s is not a setting of an agent defined in its node (%s)", k, strings.Join(inlineKeys, ", "))})
		default:
			fields[k] = v
		}
	}
	// the settings it knows are checked too: every mistake at once
	def, more := decodeDefined(nd, fields, kinds)
	if probs = append(probs, more...); len(probs) > 0 {
		return nil, probs
	}
	return def, nil
}

// decodeDefined decodes and checks the known settings of node nd's agent.
func decodeDefined(nd *chain.Node, fields map[string]any, kinds llm.Kinds) (*Definition, []tool.Problem) {
	data, err := json.Marshal(fields)
	if err != nil {
		return nil, []tool.Problem{{Field: "config", Message: "config cannot be read as JSON: " + err.Error()}}
	}
	// JSON is YAML: the agent file's decoder gives the same type errors,
	// naming the field, and refuses unknown fields.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, []tool.Problem{{Field: "config", Message: yamlErr(err)}}
	}
	if errs := typeErrors(&root); len(errs) > 0 {
		return nil, inlineProblems(errs)
	}
	var d Definition
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return nil, []tool.Problem{{Field: "config", Message: yamlErr(err)}}
	}
	d.Name = definedName(nd.ID)
	d.inline = true
	if errs := d.problems(kinds); len(errs) > 0 {
		return nil, inlineProblems(errs)
	}
	return &d, nil
}

// DefinedSource is the agent node nd defines written as an agent file
// (YAML) named name, for keeping it in the store as a reusable agent: its
// config's settings with output_schema under spec. The agent is checked
// first (with the host's providers, nil: any); with problems there is no
// source.
func DefinedSource(nd *chain.Node, name, description string, kinds llm.Kinds) ([]byte, []tool.Problem) {
	if !Defined(nd) {
		return nil, []tool.Problem{{Field: "config.model", Message: fmt.Sprintf("node %q defines no agent (config.model) to save", nd.ID)}}
	}
	if _, probs := DefinedAgent(nd, kinds); len(probs) > 0 {
		return nil, probs
	}
	// In the order an agent file is read: name first, output_schema last.
	doc := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v any) {
		var val yaml.Node
		if err := val.Encode(v); err == nil {
			doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &val)
		}
	}
	add("name", name)
	if description != "" {
		add("description", description)
	}
	for _, k := range inlineKeys {
		if v, ok := nd.Config[k]; ok && k != configOutputSchema {
			add(k, v)
		}
	}
	if v, ok := nd.Config[configOutputSchema]; ok {
		add("spec", map[string]any{"output_schema": v})
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, []tool.Problem{{Field: "config", Message: "config cannot be written as an agent file: " + err.Error()}}
	}
	return out, nil
}

// definedName is the name a defined agent reports itself by (its events,
// its usage rows): the node's id where that is an agent name.
func definedName(id string) string {
	if len(id) <= maxNameBytes && nameRE.MatchString(id) && !chain.IsReserved(id) {
		return id
	}
	return "agent"
}

// fieldRE is the field a problem's message starts with.
var fieldRE = regexp.MustCompile(`^([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+(?:\[\d+\])?)*)(?:[ :]|$)`)

// inlineProblems turns the agent file's messages into problems of the
// node's config: spec.output_schema is config.output_schema there.
func inlineProblems(errs []string) []tool.Problem {
	out := make([]tool.Problem, 0, len(errs))
	for _, e := range errs {
		e = strings.ReplaceAll(e, "spec.output_schema", "output_schema")
		field := "config"
		if m := fieldRE.FindStringSubmatch(e); m != nil {
			field = "config." + m[1]
			e = "config." + e
		}
		out = append(out, tool.Problem{Field: field, Message: e})
	}
	return out
}

// CheckNode is the config check of an agent node that defines its agent
// (chain.ValidateOptions.NodeConfig; other nodes have none): the agent
// itself, then its credential, known and readable, of a type its provider
// takes and allowed to this chain (cred nil: unchecked), and its model's
// URL against the host's policy (a warning naming the flag that allows it).
func (s *Set) CheckNode(nd *chain.Node, cred func(name string) chain.CredentialUse) []tool.Problem {
	if !Defined(nd) {
		return nil
	}
	var kinds llm.Kinds
	var refused func(string) string
	if s != nil {
		kinds, refused = s.providers, s.urlRefused
	}
	def, probs := DefinedAgent(nd, kinds)
	if len(probs) > 0 {
		return probs
	}
	if s != nil && s.tools != nil {
		for i, t := range def.Tools {
			if t.Tool != "" && !s.tools(t.Tool) {
				probs = append(probs, tool.Problem{Field: fmt.Sprintf("config.tools[%d].tool", i), Message: fmt.Sprintf("tools[%d].tool %q is not a tool this studio has (built-in, or mcp:<server>/<tool>)", i, t.Tool)})
			}
		}
	}
	m := def.Model
	if name := m.Credential; name != "" && cred != nil {
		const field = "config.model.credential"
		cu := cred(name)
		kind, known := kinds.Get(m.ProviderOrDefault())
		switch {
		case !cu.Found:
			probs = append(probs, tool.Problem{Field: field, Rule: chain.RuleUnknownCredential, Message: fmt.Sprintf("model.credential %q is not a credential this studio has; an admin adds it in Settings → Credentials", name)})
		case cu.Unreadable != "":
			probs = append(probs, tool.Problem{Field: field, Rule: chain.RuleCredentialUnreadable, Message: fmt.Sprintf("model.credential %q exists but cannot be read (%s); an admin removes it and adds it again in Settings → Credentials", name, cu.Unreadable)})
		case known && !slices.Contains(kind.CredentialTypes, cu.Type):
			probs = append(probs, tool.Problem{Field: field, Rule: chain.RuleCredentialType, Message: fmt.Sprintf("model.credential %q is of type %s; the %s provider takes %s", name, cu.Type, kind.Name, strings.Join(kind.CredentialTypes, " or "))})
		case !cu.Allowed:
			probs = append(probs, tool.Problem{Field: field, Rule: chain.RuleCredentialNotAllowed, Message: fmt.Sprintf("model.credential %q may not be used by this chain; an admin can allow it in Settings → Credentials", name)})
		}
	}
	if m.URL != "" && refused != nil {
		if why := refused(m.URL); why != "" {
			probs = append(probs, tool.Problem{Field: "config.model.url", Rule: RuleHostPolicy, Warning: true, Message: "model.url: " + why})
		}
	}
	return probs
}

// RuleHostPolicy is the validation rule of what the host will refuse at
// run time (as the http tool's; engine/builtin).
const RuleHostPolicy = "host_policy"
