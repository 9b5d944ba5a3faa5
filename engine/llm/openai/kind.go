package openai

import (
	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/llm"
)

// APIResponses is the model.api that chooses the Responses API (NewResponses);
// any other is Chat Completions (New).
const APIResponses = "responses"

// Kind is the openai provider as a model block names it (provider: openai,
// or none): OpenAI and every server speaking its API.
var Kind = llm.Kind{
	Name:            name,
	CredentialTypes: []string{credential.OpenAI, credential.OpenAICompatible},
	OpenAIWire:      true,
	New: func(api string, cfg llm.Config) (llm.Provider, error) {
		if api == APIResponses {
			return NewResponses(cfg)
		}
		return New(cfg)
	},
}
