// Package credential is the catalogue of credential types a chain can use by
// name: what fields each type has (as a JSON Schema the pages draw forms
// from), which of them are secret, how an HTTP request carries them, and the
// forms a secret can take on the wire, so that every one of them can be
// scrubbed from what a call returns. It holds no value of its own: values
// are sealed in the store and resolved only for the call that uses them.
package credential

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Type names.
const (
	Bearer           = "bearer"            // Authorization: Bearer <token>
	APIKey           = "api_key"           // a key in a header or a query parameter
	Basic            = "basic"             // Authorization: Basic base64(user:password)
	Headers          = "headers"           // a set of custom headers
	OpenAI           = "openai"            // a model provider's API key
	Anthropic        = "anthropic"         // a model provider's API key
	Gemini           = "gemini"            // a model provider's API key
	OpenAICompatible = "openai_compatible" // an API key for a server speaking OpenAI's API, and its base URL
)

// Use says what a credential is for: the http tool takes the HTTP types, an
// agent's provider block the model types.
type Use string

const (
	UseHTTP  Use = "http"
	UseModel Use = "model"
)

// Field is one field of a type.
type Field struct {
	Name        string
	Title       string
	Description string
	Secret      bool     // sealed at rest, never returned; scrubbed from outputs
	Required    bool     // must be present when the credential is created
	Enum        []string // the allowed values, for a closed choice
	Default     string
	// Map fields hold a set of header names and values (the headers type).
	Map bool
}

// Type is a credential type.
type Type struct {
	Name        string
	Title       string
	Description string
	Use         Use
	Fields      []Field
}

var types = []Type{
	{Name: Bearer, Title: "Bearer token", Use: UseHTTP,
		Description: "Sent as the Authorization header: Bearer <token>.",
		Fields:      []Field{{Name: "token", Title: "Token", Secret: true, Required: true}}},
	{Name: APIKey, Title: "API key", Use: UseHTTP,
		Description: "A key sent in a header (such as X-API-Key) or a query parameter (such as api_key).",
		Fields: []Field{
			{Name: "in", Title: "Sent in", Enum: []string{"header", "query"}, Default: "header", Required: true},
			{Name: "name", Title: "Header or parameter name", Required: true, Description: "for example X-API-Key or api_key"},
			{Name: "value", Title: "Key", Secret: true, Required: true},
		}},
	{Name: Basic, Title: "Basic auth", Use: UseHTTP,
		Description: "Sent as the Authorization header: Basic base64(username:password).",
		Fields: []Field{
			{Name: "username", Title: "Username", Required: true},
			{Name: "password", Title: "Password", Secret: true, Required: true},
		}},
	{Name: Headers, Title: "Custom headers", Use: UseHTTP,
		Description: "A set of headers sent with every request, each value kept secret.",
		Fields:      []Field{{Name: "headers", Title: "Headers", Secret: true, Required: true, Map: true, Description: "one header per line: Name: value"}}},
	{Name: OpenAI, Title: "OpenAI API key", Use: UseModel,
		Fields: []Field{{Name: "api_key", Title: "API key", Secret: true, Required: true}}},
	{Name: Anthropic, Title: "Anthropic API key", Use: UseModel,
		Fields: []Field{{Name: "api_key", Title: "API key", Secret: true, Required: true}}},
	{Name: Gemini, Title: "Google Gemini API key", Use: UseModel,
		Fields: []Field{{Name: "api_key", Title: "API key", Secret: true, Required: true}}},
	{Name: OpenAICompatible, Title: "OpenAI-compatible server", Use: UseModel,
		Description: "Ollama, vLLM, LM Studio, OpenRouter or any server that speaks OpenAI's API.",
		Fields: []Field{
			{Name: "base_url", Title: "Base URL", Required: true, Description: "for example http://127.0.0.1:11434/v1"},
			{Name: "api_key", Title: "API key", Secret: true, Description: "empty when the server needs none"},
		}},
}

// Types lists every type, in a fixed order.
func Types() []Type { return types }

// Lookup finds a type by name.
func Lookup(name string) (Type, bool) {
	for _, t := range types {
		if t.Name == name {
			return t, true
		}
	}
	return Type{}, false
}

// TypeNames lists the type names, for messages.
func TypeNames() []string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = t.Name
	}
	return out
}

// TypesFor lists the names of the types usable for u.
func TypesFor(u Use) []string {
	var out []string
	for _, t := range types {
		if t.Use == u {
			out = append(out, t.Name)
		}
	}
	return out
}

// Schema is the type's fields as a JSON Schema (writeOnly marks a secret
// field), from which the pages draw the form.
func (t Type) Schema() map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range t.Fields {
		p := map[string]any{"title": f.Title}
		if f.Map {
			p["type"] = "object"
			p["additionalProperties"] = map[string]any{"type": "string"}
		} else {
			p["type"] = "string"
		}
		if f.Description != "" {
			p["description"] = f.Description
		}
		if f.Secret {
			p["writeOnly"] = true
		}
		if len(f.Enum) > 0 {
			p["enum"] = f.Enum
		}
		if f.Default != "" {
			p["default"] = f.Default
		}
		props[f.Name] = p
		if f.Required {
			required = append(required, f.Name)
		}
	}
	s := map[string]any{"type": "object", "title": t.Title, "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	if t.Description != "" {
		s["description"] = t.Description
	}
	return s
}

// Field finds a field of the type.
func (t Type) Field(name string) (Field, bool) {
	for _, f := range t.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// MaxValue bounds one field's value (bytes); MaxHeaders the headers of a
// headers credential.
const (
	MaxValue   = 16 << 10
	MaxHeaders = 32
)

var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// Values are a credential's fields: each a string, or for a Map field a set
// of header names and values.
type Values map[string]any

// String returns a string field ("" when absent).
func (v Values) String(name string) string {
	s, _ := v[name].(string)
	return s
}

// Map returns a Map field.
func (v Values) Map(name string) map[string]string {
	out := map[string]string{}
	switch m := v[name].(type) {
	case map[string]string:
		for k, s := range m {
			out[k] = s
		}
	case map[string]any:
		for k, s := range m {
			if str, ok := s.(string); ok {
				out[k] = str
			}
		}
	}
	return out
}

// Check reports the first thing wrong with values for the type: an unknown
// field, a value of the wrong shape or size, a choice outside its enum, a
// header name that is not a token, a line break. complete asks for every
// required field too (a new credential; an update may leave fields as they
// are).
func (t Type) Check(values Values, complete bool) error {
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		f, ok := t.Field(k)
		if !ok {
			return fmt.Errorf("a %s credential has no field %q (fields: %s)", t.Name, k, strings.Join(t.fieldNames(), ", "))
		}
		if err := f.check(values[k]); err != nil {
			return fmt.Errorf("field %q: %w", k, err)
		}
	}
	if complete {
		for _, f := range t.Fields {
			if !f.Required {
				continue
			}
			if _, ok := values[f.Name]; !ok {
				return fmt.Errorf("field %q is required for a %s credential", f.Name, t.Name)
			}
		}
	}
	return nil
}

func (t Type) fieldNames() []string {
	out := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		out[i] = f.Name
	}
	return out
}

func (f Field) check(v any) error {
	if f.Map {
		m, ok := v.(map[string]any)
		if !ok {
			if ms, ok2 := v.(map[string]string); ok2 {
				m = map[string]any{}
				for k, s := range ms {
					m[k] = s
				}
			} else {
				return fmt.Errorf("want an object of header names and values")
			}
		}
		if len(m) == 0 {
			return fmt.Errorf("want at least one header")
		}
		if len(m) > MaxHeaders {
			return fmt.Errorf("%d headers, at most %d", len(m), MaxHeaders)
		}
		for k, hv := range m {
			if !headerName.MatchString(k) {
				return fmt.Errorf("%q is not a valid header name", k)
			}
			s, ok := hv.(string)
			if !ok {
				return fmt.Errorf("header %q: want a string value", k)
			}
			if err := checkValue(s, true); err != nil {
				return fmt.Errorf("header %q: %w", k, err)
			}
		}
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string")
	}
	if len(f.Enum) > 0 {
		for _, e := range f.Enum {
			if s == e {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", s, strings.Join(f.Enum, ", "))
	}
	if f.Name == "name" && !headerName.MatchString(s) {
		return fmt.Errorf("%q is not a valid header or parameter name", s)
	}
	if f.Name == "base_url" {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("want an http:// or https:// URL")
		}
	}
	return checkValue(s, f.Required)
}

func checkValue(s string, required bool) error {
	if required && s == "" {
		return fmt.Errorf("must not be empty")
	}
	if len(s) > MaxValue {
		return fmt.Errorf("%d bytes, at most %d", len(s), MaxValue)
	}
	if strings.ContainsAny(s, "\r\n\x00") {
		return fmt.Errorf("contains a line break or NUL")
	}
	return nil
}

// Secrets lists the secret strings of values: each secret field's value, each
// header value of a Map field, and for basic auth the user:password pair, so
// that Forms can be taken of each.
func (t Type) Secrets(values Values) []string {
	var out []string
	for _, f := range t.Fields {
		if !f.Secret {
			continue
		}
		if f.Map {
			for _, v := range values.Map(f.Name) {
				out = append(out, v)
			}
			continue
		}
		if s := values.String(f.Name); s != "" {
			out = append(out, s)
		}
	}
	if t.Name == Basic {
		out = append(out, values.String("username")+":"+values.String("password"))
	}
	return out
}

// MinScrub is the shortest form Scrubber replaces: a shorter secret would
// mangle ordinary text wherever its letters occur.
const MinScrub = 4

// Forms are the ways a secret can appear in what a call returns or an error
// echoes: as it is, upper- and lower-cased, base64 (standard and URL
// alphabets, padded or not, on its own or at any of the three byte
// alignments inside a larger encoded blob), hex (either case), URL-encoded
// (query and path escaping), JSON-escaped (with and without HTML-safe
// escapes, and with escaped slashes) and HTML-escaped. Scrubbing is a second
// line: the first is that a credential goes only to the hosts its admin
// allowed.
func Forms(secret string) []string {
	if secret == "" {
		return nil
	}
	b := []byte(secret)
	cands := []string{
		secret,
		strings.ToUpper(secret),
		strings.ToLower(secret),
		base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b),
		strings.ToUpper(hex.EncodeToString(b)),
		url.QueryEscape(secret),
		url.PathEscape(secret),
		html.EscapeString(secret),
		strings.NewReplacer("'", "&#x27;", `"`, "&quot;", "&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(secret),
	}
	for _, safe := range []bool{true, false} {
		j := jsonEscaped(secret, safe)
		cands = append(cands, j, strings.ReplaceAll(j, "/", `\/`))
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for pad := 1; pad <= 2; pad++ {
			if core := alignedBase64(enc, b, pad); len(core) >= minAligned {
				cands = append(cands, core)
			}
		}
		// At alignment 0 inside a blob, the last group may mix in the
		// next byte: only the whole groups are the secret's own.
		if core := alignedBase64(enc, b, 0); len(core) >= minAligned {
			cands = append(cands, core)
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range cands {
		if len(c) >= MinScrub && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// minAligned is the shortest base64 run taken from inside a blob: a shorter
// one would match ordinary encoded data by chance.
const minAligned = 8

// alignedBase64 is the part of the base64 of a blob that holds secret at
// byte offset pad (mod 3) and is fixed by the secret alone: the characters
// whose 6 bits all fall within the secret's bytes.
func alignedBase64(enc *base64.Encoding, secret []byte, pad int) string {
	blob := append(make([]byte, pad), secret...)
	s := enc.EncodeToString(blob)
	first := (8*pad + 5) / 6            // the first character past the prefix's bits
	last := (8*pad + 8*len(secret)) / 6 // the characters wholly within the secret
	if last > len(s) {
		last = len(s)
	}
	if first >= last {
		return ""
	}
	return s[first:last]
}

// jsonEscaped is secret as a JSON string holds it, without the quotes;
// htmlSafe escapes <, > and & as \u003c and so on (Go's default).
func jsonEscaped(secret string, htmlSafe bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(htmlSafe)
	_ = enc.Encode(secret)
	out := strings.TrimSuffix(buf.String(), "\n")
	return strings.TrimSuffix(strings.TrimPrefix(out, `"`), `"`)
}

// Mask replaces a secret in scrubbed text.
const Mask = "[credential]"

// Scrubber replaces every form of a set of secrets with Mask.
type Scrubber struct{ r *strings.Replacer }

// NewScrubber scrubs every form of each secret; longer forms first, so that
// a secret containing another is replaced whole.
func NewScrubber(secrets []string) *Scrubber {
	var forms []string
	for _, s := range secrets {
		forms = append(forms, Forms(s)...)
	}
	if len(forms) == 0 {
		return &Scrubber{}
	}
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	args := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		args = append(args, f, Mask)
	}
	return &Scrubber{r: strings.NewReplacer(args...)}
}

// String scrubs s.
func (s *Scrubber) String(in string) string {
	if s == nil || s.r == nil {
		return in
	}
	return s.r.Replace(in)
}

// Value scrubs every string inside a JSON value (map keys included), and
// returns a new value; v is not changed.
func (s *Scrubber) Value(v any) any {
	if s == nil || s.r == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		return s.r.Replace(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[s.r.Replace(k)] = s.Value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.Value(e)
		}
		return out
	default:
		return v
	}
}
