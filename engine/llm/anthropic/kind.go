package anthropic

import (
	"strings"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/llm"
)

// Kind is the anthropic provider as a model block names it
// (provider: anthropic).
var Kind = llm.Kind{
	Name:            "anthropic",
	CredentialTypes: []string{credential.Anthropic},
	DefaultURL:      "https://api.anthropic.com",
	Endpoint: func(base, _ string, _ bool) string {
		return strings.TrimRight(base, "/") + "/v1/messages"
	},
	ModelsURL: func(base string) string { return strings.TrimRight(base, "/") + "/v1/models" },
	New:       func(_ string, cfg llm.Config) (llm.Provider, error) { return New(cfg) },
}
