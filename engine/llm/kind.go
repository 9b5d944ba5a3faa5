package llm

import "slices"

// Kind is one kind of provider a model block may name (model.provider):
// what a caller needs to reach it besides the Provider itself. Each
// provider package declares its Kind; a host lists the kinds it offers
// (Kinds) and hands them to whatever calls models, which then imports no
// provider.
type Kind struct {
	// Name is the provider's name in a model block.
	Name string
	// CredentialTypes are the studio credential types whose api_key a
	// model of this kind may use.
	CredentialTypes []string
	// DefaultURL is the public API's base, where calls go when a model
	// gives no url; "" when a model must give one (or take it from an
	// openai_compatible credential's base_url).
	DefaultURL string
	// OpenAIWire says the kind speaks OpenAI's wire, as compatible servers
	// do: a model's url is the chat endpoint or its …/v1 base, an
	// openai_compatible credential may give the base, model.api chooses
	// Chat Completions or the Responses API, the model list is at the base's
	// /models, and a successful answer is read as JSON whatever its
	// Content-Type says (gateways often mislabel it).
	OpenAIWire bool
	// Endpoint is the URL a call for model to the API at base goes to, as
	// errors and traces name it, streamed or not. Unused on the OpenAI
	// wire, where the model's url says it.
	Endpoint func(base, model string, streamed bool) string
	// ModelsURL is where the API at base lists its models. Unused on the
	// OpenAI wire.
	ModelsURL func(base string) string
	// New builds the provider for one call, speaking api (a model's
	// model.api; "" is the kind's only or default API).
	New func(api string, cfg Config) (Provider, error)
}

// Kinds are the provider kinds a host offers, in the order lists show
// them. Adding a provider is its package and its Kind in the host's list.
type Kinds []Kind

// Get returns the kind named name.
func (ks Kinds) Get(name string) (Kind, bool) {
	i := slices.IndexFunc(ks, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return ks[i], true
}

// Names are the kinds' names, in order.
func (ks Kinds) Names() []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Name
	}
	return out
}
