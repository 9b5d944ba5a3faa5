package main

import (
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/llm/anthropic"
	"github.com/chainstudio/studio/engine/llm/gemini"
	"github.com/chainstudio/studio/engine/llm/openai"
)

// modelProviders are the model provider kinds agents may name, the default
// (openai) first, in the order GET /v1/providers lists them. Adding a
// provider is its package under engine/llm and its Kind here.
var modelProviders = llm.Kinds{
	openai.Kind,
	anthropic.Kind,
	gemini.Kind,
}
