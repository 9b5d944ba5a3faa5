package agent

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/llm/openai"
)

// echoProvider answers every turn with the model's name, making no request.
type echoProvider struct{}

func (echoProvider) Chat(_ context.Context, req llm.Request, _ *llm.Stream) (*llm.Reply, error) {
	return &llm.Reply{Text: "echo " + req.Model, Stop: llm.StopEnd}, nil
}

func (echoProvider) Models(context.Context) ([]string, error) { return []string{"e1"}, nil }

// echoKind is a provider a host adds to its list: agents call it without
// engine/agent knowing it.
var echoKind = llm.Kind{
	Name:       "echo",
	DefaultURL: "http://echo.invalid",
	Endpoint:   func(base, model string, _ bool) string { return base + "/" + model },
	ModelsURL:  func(base string) string { return base + "/models" },
	New:        func(string, llm.Config) (llm.Provider, error) { return echoProvider{}, nil },
}

func TestProvidersComeFromTheHost(t *testing.T) {
	t.Parallel()
	doc := "name: a\nmodel: {provider: echo, name: m1, stream: false}\n"
	// Parse checks the definition on its own; the set checks its provider
	// against the host's list, which the message names.
	d, err := Parse([]byte(doc), "agents/a.agent.yaml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	_, err = NewSet([]*Definition{d}, LoadOptions{Providers: testProviders})
	wantErrContains(t, err, `agents/a.agent.yaml: agent "a": model.provider "echo" is not a provider the studio knows (openai, anthropic, gemini)`)
	_, err = NewSet([]*Definition{d}, LoadOptions{Providers: llm.Kinds{openai.Kind}})
	wantErrContains(t, err, `model.provider "echo" is not a provider the studio knows (openai)`)
	dir := writeDir(t, map[string]string{"a.agent.yaml": doc})
	_, err = LoadDir(dir, LoadOptions{Providers: testProviders})
	wantErrContains(t, err, dir+`/a.agent.yaml: agent "a": model.provider "echo" is not a provider the studio knows`)

	// One more kind in the host's list is all an agent needs to call it.
	s, err := LoadDir(dir, LoadOptions{Providers: append(llm.Kinds{echoKind}, testProviders...)})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if _, r := runAgent(t, s, "a", "hi", nil); r.Result["answer"] != "echo m1" {
		t.Fatalf("result %+v (error %q)", r.Result, r.Error)
	}
	mc := &ModelClient{Providers: llm.Kinds{echoKind}}
	a, _ := s.Get("a")
	if ids, err := mc.Models(context.Background(), a.Model); err != nil || len(ids) != 1 {
		t.Fatalf("models: %v, %v", ids, err)
	}
	if infos := ProviderInfos(llm.Kinds{echoKind}); len(infos) != 1 || infos[0].DefaultURL != "http://echo.invalid" {
		t.Fatalf("infos = %+v", infos)
	}

	// A client without the kind refuses the call, naming what it offers.
	mc = &ModelClient{Providers: testProviders}
	_, err = mc.Chat(context.Background(), "a", a.Model, []Message{{Role: "user", Content: "hi"}})
	wantErrContains(t, err, `model m1: model.provider "echo" is not a provider this host offers (openai, anthropic, gemini)`)
}
