package gemini

import (
	"strings"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/llm"
)

// Kind is the gemini provider as a model block names it (provider: gemini).
var Kind = llm.Kind{
	Name:            "gemini",
	CredentialTypes: []string{credential.Gemini},
	DefaultURL:      strings.TrimSuffix(defaultBaseURL, "/"),
	Endpoint: func(base, model string, streamed bool) string {
		method := ":generateContent"
		if streamed {
			method = ":streamGenerateContent"
		}
		return strings.TrimRight(base, "/") + "/v1beta/models/" + model + method
	},
	ModelsURL: func(base string) string { return strings.TrimRight(base, "/") + "/v1beta/models" },
	New:       func(_ string, cfg llm.Config) (llm.Provider, error) { return New(cfg) },
}
