package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// modelListTimeout bounds one model list: a server that has not answered
// by then is reported as failed rather than holding the request.
const ModelListTimeout = 20 * time.Second

// providerJSON is a provider as GET /v1/providers lists it.
type providerJSON struct {
	Name            string   `json:"name"`
	CredentialTypes []string `json:"credential_types"`
	DefaultURL      *string  `json:"default_url"` // null: the model needs a url or an openai_compatible credential's base_url
	ListsModels     bool     `json:"lists_models"`
}

// GET /v1/providers
func (s *Admin) ListProviders(c echo.Context) error {
	out := []providerJSON{}
	for _, p := range agent.ProviderInfos(s.Providers) {
		j := providerJSON{Name: p.Name, CredentialTypes: p.CredentialTypes, ListsModels: p.ListsModels}
		if p.DefaultURL != "" {
			u := p.DefaultURL
			j.DefaultURL = &u
		}
		out = append(out, j)
	}
	return c.JSON(http.StatusOK, map[string]any{"providers": out})
}

// agentModelsJSON is the answer of GET /v1/agents/{name}/models.
type agentModelsJSON struct {
	Agent      string   `json:"agent,omitempty"` // GET /v1/models: none
	Provider   string   `json:"provider"`
	Model      string   `json:"model"`
	URL        string   `json:"url,omitempty"`        // model.url without user info and query values
	Credential string   `json:"credential,omitempty"` // the credential's name, never its value
	Listed     bool     `json:"listed"`               // false: the server does not list its models
	Reason     string   `json:"reason,omitempty"`     // why it is not listed
	Models     []string `json:"models"`
	HasModel   bool     `json:"has_model"` // the agent's model is among them
}

// GET /v1/agents/{name}/models: the models the agent's model server
// offers, asked now over the model calls' guarded client with the
// credentials an agent run may use (those open to every chain).
func (s *Admin) AgentModels(c echo.Context) error {
	d, err := s.lookupAgent(c.Param("name"))
	if err != nil {
		return err
	}
	m := d.Model
	if m == nil {
		return httpcore.Error(httpcore.ECONFLICT, "not_model_agent",
			fmt.Sprintf("agent %q is a %s agent: it calls no model, so there is no model list to ask for", d.Name, d.Kind()),
			map[string]any{"name": d.Name, "kind": d.Kind()})
	}
	return s.listModels(c, m, "", agentModelsJSON{Agent: d.Name})
}

// GET /v1/models?provider=&credential=&url=&chain=: the models a model
// block would be offered (an agent defined in a node, as its form is
// filled in), asked as GET /v1/agents/{name}/models asks; the credential
// must be one the chain (by id; none: every chain) may use.
func (s *Admin) ListModels(c echo.Context) error {
	q := c.QueryParams()
	for k := range q {
		switch k {
		case "provider", "credential", "url", "chain", "name":
		default:
			return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("unknown parameter %q (provider, credential, url, chain, name)", k), map[string]any{"path": k})
		}
	}
	m := &agent.Model{Provider: q.Get("provider"), Credential: q.Get("credential"), URL: q.Get("url"), Name: q.Get("name")}
	if _, known := s.Providers.Get(m.ProviderOrDefault()); s.Providers != nil && !known {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("provider %q is not a provider the studio knows (%s)", m.Provider, strings.Join(s.Providers.Names(), ", ")), map[string]any{"path": "provider"})
	}
	if m.URL != "" && !strings.HasPrefix(m.URL, "http://") && !strings.HasPrefix(m.URL, "https://") {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("url %q must start with http:// or https://", redact.URL(m.URL)), map[string]any{"path": "url"})
	}
	return s.listModels(c, m, q.Get("chain"), agentModelsJSON{})
}

// listModels answers the models m's server lists, asked with the
// credentials chain chainID ("": every chain) may use; out names who asks.
func (s *Admin) listModels(c echo.Context, m *agent.Model, chainID string, out agentModelsJSON) error {
	out.Provider, out.Model, out.Credential, out.Models = m.ProviderOrDefault(), m.Name, m.Credential, []string{}
	who := map[string]any{"provider": out.Provider}
	if out.Agent != "" {
		who = map[string]any{"name": out.Agent}
	}
	if m.URL != "" {
		out.URL = redact.URL(m.URL)
	}
	ctx, cancel := context.WithTimeoutCause(c.Request().Context(), s.ModelListWait,
		fmt.Errorf("model %s: the server did not answer the model list within %s: %w", m.Name, s.ModelListWait, context.DeadlineExceeded))
	defer cancel()
	if s.Vault != nil {
		ctx = tool.WithCredentials(ctx, s.Vault.ForChain(chainID))
	}
	mc := agent.ModelClient{HTTP: s.ModelHTTP, Providers: s.Providers}
	ids, err := mc.Models(ctx, m)
	var le *agent.ModelListError
	switch {
	case err == nil:
		out.Listed, out.Models = true, ids
		out.HasModel = servesModel(ids, m.Name)
		return c.JSON(http.StatusOK, out)
	case errors.Is(err, llm.ErrNoModelList):
		out.Reason = err.Error()
		return c.JSON(http.StatusOK, out)
	case c.Request().Context().Err() != nil:
		return err // the caller went away
	case errors.As(err, &le) && le.Refused:
		return httpcore.Error(httpcore.EINVALID, "model_address_refused", err.Error(), who)
	case errors.As(err, &le), errors.Is(err, context.DeadlineExceeded):
		return httpcore.Error(httpcore.EUPSTREAM, "model_server_error", err.Error(), who)
	}
	// The studio cannot call the model: its credential, key or url.
	return httpcore.Error(httpcore.EINVALID, "model_unusable", err.Error(), who)
}

// servesModel reports whether name is among the listed ids, as servers
// name it: Ollama lists "llama3:latest" for "llama3".
func servesModel(ids []string, name string) bool {
	for _, id := range ids {
		if id == name || id == name+":latest" || strings.TrimSuffix(name, ":latest") == id {
			return true
		}
	}
	return false
}
