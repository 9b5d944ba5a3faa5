package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/engine/tool"
)

// ProviderInfo describes one provider a model block may name.
type ProviderInfo struct {
	Name string
	// CredentialTypes are the credential types its model.credential may be.
	CredentialTypes []string
	// DefaultURL is where calls go when the model gives no url; "" when
	// the model needs a url (or an openai_compatible credential's base_url).
	DefaultURL string
	// ListsModels says the provider's API has a model list (a compatible
	// server may still not serve it: Models then wraps llm.ErrNoModelList).
	ListsModels bool
}

// ProviderInfos describes the provider kinds a host offers, in their order.
func ProviderInfos(kinds llm.Kinds) []ProviderInfo {
	out := make([]ProviderInfo, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, ProviderInfo{Name: k.Name, CredentialTypes: append([]string(nil), k.CredentialTypes...),
			DefaultURL: k.DefaultURL, ListsModels: true})
	}
	return out
}

// ModelListError is a model list the server was asked for and did not
// give: it failed, it does not list its models (errors.Is llm.ErrNoModelList),
// or the address guard refused its address (Refused). Any other error from
// Models is the studio's own: the model's credential, key or url.
type ModelListError struct {
	Refused bool
	text    string
	err     error
}

func (e *ModelListError) Error() string { return e.text }
func (e *ModelListError) Unwrap() error { return e.err }

// Models lists the models the server of m offers, resolving its target as
// Chat does (the credential through ctx's credential store, the key, the
// url) and asking over the same client.
func (mc *ModelClient) Models(ctx context.Context, m *Model) ([]string, error) {
	t, err := mc.resolveTarget(ctx, m)
	if err != nil {
		return nil, err
	}
	key := t.key
	if !t.keyed && m.APIKeyEnv != "" {
		if key = mc.getenv(m.APIKeyEnv); key == "" {
			return nil, fmt.Errorf("model %s: model.api_key_env names %s, which is not set (or empty) in the studio's environment", m.Name, m.APIKeyEnv)
		}
	}
	url := redact.URL(listURL(t))
	// The list is at the base, never at a pinned chat endpoint.
	lt := t
	lt.pin = nil
	p, _, err := mc.provider(lt, key, false)
	if err != nil {
		return nil, fmt.Errorf("model %s at %s: %s", m.Name, url, clipped(llm.Scrub(err.Error(), key)))
	}
	ids, err := p.Models(ctx)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return nil, cause
		}
		if why := refusal(err); why != "" {
			return nil, &ModelListError{Refused: true, text: fmt.Sprintf("model %s at %s: %s", m.Name, url, why), err: err}
		}
		return nil, &ModelListError{text: fmt.Sprintf("model %s at %s: %s", m.Name, url, clipped(providerText(err, t, key))), err: err}
	}
	return ids, nil
}

// listURL is the URL a model list of t is asked at.
func listURL(t target) string {
	if !t.kind.OpenAIWire {
		return t.kind.ModelsURL(t.baseOrDefault())
	}
	return strings.TrimRight(t.base, "/") + "/models"
}

// refusal is the host policy's own words when err is a connection it
// refused (the address guard of the model client: "127.0.0.1 is a loopback
// address; model calls reach …"), without the transport's wrapping, or "".
func refusal(err error) string {
	if !errors.Is(err, tool.ErrDenied) {
		return ""
	}
	var why string
	var walk func(error) bool
	walk = func(e error) bool {
		for e != nil {
			switch u := e.(type) {
			case interface{ Unwrap() []error }:
				for _, x := range u.Unwrap() {
					if walk(x) {
						return true
					}
				}
				return false
			case interface{ Unwrap() error }:
				if next := u.Unwrap(); next != tool.ErrDenied {
					e = next
					continue
				}
				why = e.Error()
				return true
			default:
				return false
			}
		}
		return false
	}
	if !walk(err) {
		return tool.ErrDenied.Error()
	}
	return why
}
