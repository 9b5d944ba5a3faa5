// Package api is the studio's JSON API under /v1 (described in
// web/openapi.json): chains and their versions, runs, triggers, and the
// admins' agents, credentials, MCP servers and users. A handler decodes
// the request, calls the ops function a page's form calls too, and encodes
// the answer; the errors are httpcore's table.
package api

import (
	"context"

	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
)

// API is the JSON API's handlers, by what they serve.
type API struct {
	Chains   *Chains   // chains, versions, templates, tools, expressions
	Runs     *Runs     // runs, their nodes, comparisons, answers, usage
	Triggers *Triggers // schedules and webhooks
	Admin    *Admin    // agents, models, credentials, MCP servers, users
}

// MCPRoom says whether one more chain may be exposed as an MCP tool
// (the MCP server's tool limit).
type MCPRoom interface {
	RoomFor(ctx context.Context, chainID string) error
}

// New returns the API's handlers over env. hookLog summarises refused
// webhook calls.
func New(env *ops.Env, mcp MCPRoom, hookLog *httpcore.LogSummary) *API {
	return &API{
		Chains:   &Chains{Env: env, mcp: mcp},
		Runs:     &Runs{Env: env},
		Triggers: &Triggers{Env: env, hookLog: hookLog},
		Admin:    &Admin{Env: env},
	}
}

// Chains serves chains, their versions, publishing, templates, the tool
// catalogue and the expression editor.
type Chains struct {
	*ops.Env
	mcp      MCPRoom
	exprRuns exprRunCache // runs decoded for expression previews
}

// Runs serves runs: starting, reading, steering, comparing, and their
// answers and usage.
type Runs struct {
	*ops.Env
}

// Triggers serves schedules and webhooks.
type Triggers struct {
	*ops.Env
	hookLog *httpcore.LogSummary
}

// Admin serves agents and their models, credentials, MCP servers and users.
type Admin struct {
	*ops.Env
}
