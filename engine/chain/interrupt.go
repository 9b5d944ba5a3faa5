package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// on_timeout policies.
const (
	OnTimeoutReject  = "reject"
	OnTimeoutDefault = "default"
	OnTimeoutEdge    = "edge"
)

// Outcome labels an interrupt node routes by.
const (
	LabelApproved = "approved"
	LabelRejected = "rejected"
	LabelTimeout  = "timeout"
)

// maxApprovers bounds config.approvers.
const maxApprovers = 50

// InterruptConfig is an interrupt node's config, parsed.
type InterruptConfig struct {
	Prompt       any
	HasPrompt    bool
	Schema       map[string]any // JSON Schema of the answer value
	Proposed     any            // the value to approve; HasProposed false: the node's input
	HasProposed  bool
	Deadline     time.Time     // fixed deadline (RFC 3339)
	Timeout      time.Duration // deadline relative to the pause
	OnTimeout    string
	DefaultValue any
	HasDefault   bool
	Escalation   string        // webhook URL notified when the pause starts and nears its deadline
	NotifyBefore time.Duration // how long before the deadline the escalation is told
	Approvers    []string      // who may answer (names or roles; shown, checked by the host)
	Fields       []AskField    // what the person sees beside the prompt (askcontext.go), by label

	schema *jsonschema.Schema
}

// CheckAgainst has CheckValue check answers against schema m (the one a
// pause recorded) where the config has none.
func (ic *InterruptConfig) CheckAgainst(m map[string]any) {
	ic.schema, _ = compileAnswerSchema(m)
}

// ConfigIssue is a problem with one field of a node's config.
type ConfigIssue struct {
	Field string // config.<name>
	Msg   string
}

// InterruptConfigSchema is the JSON Schema of an interrupt node's config,
// for forms and the tool catalogue.
func InterruptConfigSchema() map[string]any {
	dur := func(d string) map[string]any {
		return map[string]any{"description": d + ": seconds, or a duration such as \"90m\" or \"2h\"",
			"oneOf": []any{map[string]any{"type": "number", "exclusiveMinimum": 0.0}, map[string]any{"type": "string", "minLength": 1}}}
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"prompt":        map[string]any{"description": "what to ask: text whose {{ }} placeholders read the run's data, e.g. Refund {{ input.order }}? (default: the node's input)"},
			"fields":        map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string", "minLength": 1}, "maxProperties": float64(maxAskFields), "description": "shown beside the prompt: label → expression over the run's data, e.g. Order → input.order"},
			"schema":        map[string]any{"type": "object", "description": "JSON Schema the answer value must satisfy; the inbox builds its form from it"},
			"proposed":      map[string]any{"description": "the value to approve (default: the node's input)"},
			"deadline":      map[string]any{"type": "string", "format": "date-time", "description": "answer before this time (RFC 3339)"},
			"timeout":       dur("answer within this long after the pause"),
			"on_timeout":    map[string]any{"type": "string", "enum": []any{OnTimeoutReject, OnTimeoutDefault, OnTimeoutEdge}, "default": OnTimeoutReject, "description": "what the deadline does: reject, answer default_value, or take the edge labelled \"timeout\""},
			"default_value": map[string]any{"description": "the answer on_timeout \"default\" gives"},
			"escalation":    map[string]any{"type": "string", "format": "uri", "description": "webhook (http/https) told when the pause starts and when its deadline nears"},
			"notify_before": dur("how long before the deadline the escalation webhook is told"),
			"approvers":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "maxItems": float64(maxApprovers), "description": "who may answer: names or roles"},
		},
		"x-order": []any{"prompt", "fields", "schema", "proposed", "deadline", "timeout", "on_timeout", "default_value", "escalation", "notify_before", "approvers"},
	}
}

// ParseInterruptConfig reads an interrupt node's config; every problem is
// returned with the field it concerns.
func ParseInterruptConfig(cfg map[string]any) (*InterruptConfig, []ConfigIssue) {
	ic := &InterruptConfig{}
	var issues []ConfigIssue
	bad := func(field, format string, a ...any) {
		issues = append(issues, ConfigIssue{Field: "config." + field, Msg: fmt.Sprintf(format, a...)})
	}
	ic.Prompt, ic.HasPrompt = cfg["prompt"]
	var te *TemplateError
	if _, err := RenderTemplates(ic.Prompt, "prompt", nil); errors.As(err, &te) {
		bad(te.Field, "is not a valid template: %v", te.Err)
	}
	if f, ok := cfg["fields"]; ok && f != nil {
		ic.Fields = parseAskFields(f, bad)
	}
	ic.Proposed, ic.HasProposed = cfg["proposed"]
	ic.DefaultValue, ic.HasDefault = cfg["default_value"]
	if s, ok := cfg["schema"]; ok && s != nil {
		m, isObj := s.(map[string]any)
		if !isObj {
			bad("schema", "must be a JSON Schema object, got %s", jsonKind(s))
		} else if sch, err := compileAnswerSchema(m); err != nil {
			bad("schema", "is not a valid JSON Schema: %v", err)
		} else {
			ic.Schema, ic.schema = m, sch
		}
	}
	if d, ok := cfg["deadline"]; ok && d != nil {
		s, _ := d.(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			bad("deadline", "must be an RFC 3339 time such as 2026-12-01T17:00:00Z, got %s", shortJSON(d))
		}
		ic.Deadline = t
	}
	var err error
	if ic.Timeout, err = configDuration(cfg, "timeout"); err != nil {
		bad("timeout", "%v", err)
	}
	if ic.NotifyBefore, err = configDuration(cfg, "notify_before"); err != nil {
		bad("notify_before", "%v", err)
	}
	timed := !ic.Deadline.IsZero() || ic.Timeout > 0
	if p, ok := cfg["on_timeout"]; ok && p != nil {
		s, _ := p.(string)
		switch s {
		case OnTimeoutReject, OnTimeoutDefault, OnTimeoutEdge:
			ic.OnTimeout = s
		default:
			bad("on_timeout", "must be reject, default or edge, got %s", shortJSON(p))
		}
		if !timed && ic.OnTimeout != "" {
			bad("on_timeout", "has no effect without a deadline or timeout")
		}
	}
	if timed && ic.OnTimeout == "" {
		ic.OnTimeout = OnTimeoutReject
	}
	if ic.OnTimeout == OnTimeoutDefault {
		if !ic.HasDefault {
			bad("default_value", "is required when on_timeout is \"default\"")
		} else if field, err := ic.CheckValue(ic.DefaultValue); err != nil {
			bad("default_value", "does not satisfy config.schema at %s: %v", field, err)
		}
	}
	if e, ok := cfg["escalation"]; ok && e != nil {
		s, _ := e.(string)
		u, err := url.Parse(s)
		if s == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("escalation", "must be an http or https URL")
		} else {
			ic.Escalation = s
		}
	}
	if ic.NotifyBefore > 0 && (ic.Escalation == "" || !timed) {
		bad("notify_before", "needs an escalation URL and a deadline or timeout")
	}
	if a, ok := cfg["approvers"]; ok && a != nil {
		list, isList := a.([]any)
		if !isList || len(list) > maxApprovers {
			bad("approvers", "must be a list of at most %d names or roles", maxApprovers)
		}
		for k, x := range list {
			s, _ := x.(string)
			if strings.TrimSpace(s) == "" {
				bad(fmt.Sprintf("approvers[%d]", k), "must be a non-empty string")
				continue
			}
			ic.Approvers = append(ic.Approvers, s)
		}
	}
	return ic, issues
}

// configDuration reads seconds (a number) or a Go duration string.
func configDuration(cfg map[string]any, key string) (time.Duration, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return 0, nil
	}
	var d time.Duration
	switch x := v.(type) {
	case float64:
		d = time.Duration(x * float64(time.Second))
	case int:
		d = time.Duration(x) * time.Second
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			return 0, fmt.Errorf("must be seconds or a duration such as \"90m\", got %q", x)
		}
	default:
		return 0, fmt.Errorf("must be seconds or a duration such as \"90m\", got %s", jsonKind(v))
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be more than zero, got %s", shortJSON(v))
	}
	return d, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case float64, int:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

func shortJSON(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// compileAnswerSchema compiles an answer schema. References to anything but
// the schema itself are refused: a chain never makes the host fetch a URL.
func compileAnswerSchema(m map[string]any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const loc = "urn:chainstudio:answer"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("schema references %q: only references inside the schema are allowed", u)
}

// CheckValue validates v against the config's schema (none: anything
// goes). On failure it returns the field, as a JSON pointer ("/amount"; "/"
// for the whole value), and why.
func (ic *InterruptConfig) CheckValue(v any) (string, error) {
	if ic.schema == nil {
		return "", nil
	}
	err := ic.schema.Validate(NormalizeValue(v))
	if err == nil {
		return "", nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "/", err
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	field := "/" + strings.Join(leaf.InstanceLocation, "/")
	msg := leaf.ErrorKind.LocalizedString(message.NewPrinter(language.English))
	return field, errors.New(msg)
}

// Deadline returns when a pause that starts at now must be answered (zero:
// never): the earlier of the fixed deadline and now + timeout.
func (ic *InterruptConfig) DeadlineFrom(now time.Time) time.Time {
	var d time.Time
	if ic.Timeout > 0 {
		d = now.Add(ic.Timeout)
	}
	if !ic.Deadline.IsZero() && (d.IsZero() || ic.Deadline.Before(d)) {
		d = ic.Deadline
	}
	return d
}
