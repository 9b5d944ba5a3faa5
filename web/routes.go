package web

import "github.com/labstack/echo/v4"

// routes registers every route. Keep this the one table of routes: the
// access test walks it to prove none is left open when a token is set, and
// the OpenAPI test proves each /v1 route is described in openapi.json.
func (s *Server) routes(e *echo.Echo) {
	e.GET("/livez", s.livez)
	e.GET("/readyz", s.readyz)
	e.GET("/healthz", s.readyz) // readiness, as load balancers probing /healthz expect (docs/deploy.md)
	e.GET("/metrics", s.metrics.handler())

	// The designer's pages and their htmx fragments. Pages
	// and fragments render HTML on the server (views/); the editor and the
	// versions page read chains from /v1, the run pages from their …/data
	// routes. Fragments answer 200 even when they show an error,
	// so the browser console stays clean; the error is in the fragment.
	e.GET("/static/*", s.serveStatic)

	e.GET("/", s.pages.Chains.PageChains)
	e.GET("/fragments/chains", s.pages.Chains.FragChainRows)
	e.POST("/chains/new", s.pages.Chains.PageNewChain)
	e.POST("/chains/import", s.pages.Chains.PageImport)
	e.POST("/chains/:id/delete", s.pages.Chains.PageDeleteChain)

	e.GET("/chains/:id", s.pages.Chains.PageEditor)
	e.POST("/chains/:id/save", s.pages.Chains.PageSave)
	e.POST("/chains/:id/run", s.pages.Chains.PageStartRun)
	e.GET("/chains/:id/nodes/:node/runnode", s.pages.Chains.FragRunNodeDialog)
	e.GET("/chains/:id/nodes/:node/view", s.pages.Chains.FragNodeView)          // the node view's data
	e.GET("/chains/:id/nodes/:node/view/runs", s.pages.Chains.FragNodeViewRuns) // and its run picker
	e.POST("/fragments/props", s.pages.Chains.FragProps)
	e.POST("/fragments/expr", s.pages.Chains.FragExpr)

	e.GET("/chains/:id/runs", s.pages.Runs.PageRuns)
	e.GET("/runs", s.pages.Runs.PageAllRuns)
	e.GET("/inbox", s.pages.Runs.PageInbox) // the approval inbox
	e.GET("/runs/:id", s.pages.Runs.PageRun)
	e.GET("/runs/:id/events", s.live.PageRunEvents) // the page's stream (web/live)
	e.GET("/runs/:id/timeline", s.pages.Runs.FragTimeline)
	e.GET("/runs/:id/controls", s.pages.Runs.FragRunControls)
	e.GET("/runs/:id/nodes/:node", s.pages.Runs.FragNodeDrawer)
	e.POST("/runs/:id/resume", s.pages.Runs.PageResume)
	e.POST("/runs/:id/rerun", s.pages.Runs.PageRerun)
	e.POST("/runs/:id/cancel", s.pages.Runs.PageCancel)

	e.GET("/chains/:id/versions", s.pages.Chains.PageVersions)
	e.POST("/chains/:id/versions/:v/restore", s.pages.Chains.PageRestore)
	e.POST("/chains/:id/versions/:v/publish", s.pages.Chains.PagePublishVersion)

	// the page comparing two runs and the "Compare with…"
	// control of a run's page. The page's canvas reads /v1: the comparison
	// (GET /v1/runs/{id}/diff/{other}) and the two runs' chains.
	e.GET("/runs/:id/diff/:other", s.pages.Runs.PageRunDiff)
	e.GET("/runs/:id/compare-with", s.pages.Runs.FragCompareWith)
	e.GET("/runs/:id/compare", s.pages.Runs.PageCompare)

	// the sign-in page that gives a browser a session cookie.
	e.GET("/login", s.pageLogin)
	e.POST("/login", s.postLogin)
	e.POST("/logout", s.postLogout)

	// the Agents pages (list, one agent with its expanded chain,
	// run from a form).
	e.GET("/agents", s.pages.Settings.PageAgents)
	e.GET("/agents/new", s.pages.Settings.PageNewAgent)
	e.POST("/agents/new", s.pages.Settings.PageSaveAgent)
	e.GET("/agents/:name", s.pages.Settings.PageAgent)
	e.GET("/agents/:name/edit", s.pages.Settings.PageEditAgent)
	e.POST("/agents/:name/edit", s.pages.Settings.PageSaveAgent)
	e.POST("/agents/:name/import", s.pages.Settings.PageImportAgent)
	e.POST("/agents/:name/delete", s.pages.Settings.PageDeleteAgent)
	e.POST("/agents/:name/run", s.pages.Settings.PageRunAgent)

	e.GET("/usage", s.pages.Runs.PageUsage)
	e.GET("/runs/:id/usage", s.pages.Runs.FragRunUsage)

	v1 := e.Group("/v1")
	v1.GET("/openapi.json", s.openAPI)

	v1.GET("/chains", s.api.Chains.ListChains)
	v1.POST("/chains", s.api.Chains.CreateChain)
	v1.POST("/chains/import", s.api.Chains.ImportChain)
	v1.GET("/templates", s.api.Chains.ListTemplates)                  // chains to start from
	v1.POST("/templates/:id/chains", s.api.Chains.CreateFromTemplate) // a new chain from one
	v1.GET("/chains/:id", s.api.Chains.GetChain)
	v1.PUT("/chains/:id", s.api.Chains.UpdateChain)
	v1.PATCH("/chains/:id", s.api.Chains.PatchChain) // save only what changed
	v1.DELETE("/chains/:id", s.api.Chains.DeleteChain)
	v1.GET("/chains/:id/versions", s.api.Chains.ListVersions)
	v1.POST("/chains/:id/versions", s.api.Chains.NameVersion)
	v1.POST("/chains/:id/publish", s.api.Chains.PublishChain)
	v1.GET("/chains/:id/versions/:v", s.api.Chains.GetVersion)
	v1.POST("/chains/:id/versions/:v/restore", s.api.Chains.RestoreVersion)
	v1.GET("/chains/:id/diff", s.api.Chains.DiffVersions)
	v1.GET("/chains/:id/export", s.api.Chains.ExportChain)
	v1.POST("/chains/:id/runs", s.api.Runs.StartRun)
	v1.POST("/chains/:id/nodes/:node/run", s.api.Runs.RunNode)
	v1.POST("/chains/:id/tests/run", s.runChainTests)
	v1.GET("/chains/:id/expr/context", s.api.Chains.ExprContext)  // the expression editor
	v1.POST("/chains/:id/expr/preview", s.api.Chains.ExprPreview) // the expression editor
	v1.POST("/chains/:id/extract", s.api.Chains.ExtractChain)     // extract to sub-chain
	// triggers
	v1.GET("/chains/:id/triggers", s.api.Triggers.ListTriggers)
	v1.POST("/chains/:id/schedules", s.api.Triggers.CreateSchedule)
	v1.PUT("/chains/:id/schedules/:sid", s.api.Triggers.UpdateSchedule)
	v1.DELETE("/chains/:id/schedules/:sid", s.api.Triggers.DeleteSchedule)
	v1.POST("/chains/:id/hooks", s.api.Triggers.CreateHook)
	v1.DELETE("/chains/:id/hooks/:hid", s.api.Triggers.DeleteHook)
	v1.POST("/chains/:id/hooks/:hid/test", s.api.Triggers.TestHook) // "Send test event"

	v1.POST("/hooks/:hook_id", s.api.Triggers.CallHook) // signed, not the token (publicPath)

	v1.POST("/validate", s.api.Chains.ValidateDocument)
	v1.GET("/tools", s.api.Chains.ListTools) // the tool catalogue with schemas

	v1.GET("/runs", s.api.Runs.ListRuns)
	v1.GET("/runs/:id", s.api.Runs.GetRun)
	v1.GET("/runs/:id/events", s.live.RunEvents) // web/live
	v1.POST("/runs/:id/resume", s.api.Runs.ResumeRun)
	v1.GET("/interrupts", s.api.Runs.ListInterrupts) // the approval inbox
	v1.POST("/runs/:id/cancel", s.api.Runs.CancelRun)
	v1.POST("/runs/:id/rerun", s.api.Runs.RerunRun)
	v1.GET("/runs/:id/diff/:other", s.api.Runs.DiffRuns)
	v1.POST("/runs/:id/save-test", s.saveRunAsTest)
	v1.GET("/runs/:id/nodes/:node/why", s.api.Runs.RunNodeWhy)
	v1.GET("/runs/:id/nodes/:node/output", s.api.Runs.RunNodeValue("output")) // an elided value, streamed
	v1.GET("/runs/:id/nodes/:node/input", s.api.Runs.RunNodeValue("input"))
	v1.GET("/runs/:id/final-output", s.api.Runs.RunFinalOutput)
	v1.GET("/runs/:id/usage", s.api.Runs.GetRunUsage)      // tokens and cost
	v1.GET("/usage", s.api.Runs.GetUsage)                  // per chain and agent over time
	v1.GET("/conversations", s.api.Runs.ListConversations) // agents' memory, by session
	v1.GET("/conversations/:scope/:session", s.api.Runs.GetConversation)
	v1.DELETE("/conversations/:scope/:session", s.api.Runs.ClearConversation)

	v1.POST("/a2e", s.a2e.Run)
	// The A2E SDK's HTTP transport under the base URL /v1/a2e (web/a2ehttp).
	v1.POST("/a2e/session", s.a2e.OpenSession)
	v1.POST("/a2e/send", s.a2e.Send)
	v1.GET("/a2e/stream", s.a2e.Stream)

	// The studio as an MCP server: exposed chains are tools (web/mcpserver).
	v1.PUT("/chains/:id/mcp", s.api.Chains.SetChainMCP)
	v1.POST("/mcp", s.mcp.Endpoint)
	v1.GET("/mcp", s.mcp.Endpoint)
	v1.DELETE("/mcp", s.mcp.Endpoint)

	// The agents.
	v1.GET("/agents", s.api.Admin.ListAgents)
	v1.GET("/agents/:name", s.api.Admin.GetAgent)
	v1.GET("/agents/:name/chain", s.api.Admin.AgentChain)
	v1.POST("/agents/:name/run", s.api.Admin.RunAgent)
	v1.GET("/agents/:name/models", s.api.Admin.AgentModels)
	v1.POST("/agents", s.api.Admin.CreateAgent)
	v1.PUT("/agents/:name", s.api.Admin.PutAgent)
	v1.DELETE("/agents/:name", s.api.Admin.DeleteAgent)
	v1.GET("/agents/:name/versions", s.api.Admin.AgentVersions)
	v1.GET("/models", s.api.Admin.ListModels) // a model block's models, as an agent's form is filled in
	v1.GET("/providers", s.api.Admin.ListProviders)

	// Who am I, and the admins' user management. The
	// roles these need are declared in roles.go like every route's.
	v1.GET("/me", s.api.Admin.GetMe)
	v1.GET("/users", s.api.Admin.ListUsers)
	v1.POST("/users", s.api.Admin.AddUser)
	v1.PUT("/users/:name", s.api.Admin.SetUserRole)
	v1.DELETE("/users/:name", s.api.Admin.RemoveUser)
	e.GET("/users", s.pages.Settings.PageUsers)
	e.POST("/users", s.pages.Settings.PageAddUser)
	e.POST("/users/:name/role", s.pages.Settings.PageSetUserRole)
	e.POST("/users/:name/remove", s.pages.Settings.PageRemoveUser)

	// The admins manage credentials; editors pick them by
	// name in nodes; viewers see names only. No route ever answers a value.
	v1.GET("/credential-types", s.api.Admin.ListCredentialTypes)
	v1.GET("/credentials", s.api.Admin.ListCredentials)
	v1.POST("/credentials", s.api.Admin.AddCredential)
	v1.GET("/credentials/:name", s.api.Admin.GetCredential)
	v1.PATCH("/credentials/:name", s.api.Admin.UpdateCredential)
	v1.DELETE("/credentials/:name", s.api.Admin.RemoveCredential)
	e.GET("/settings/credentials", s.pages.Settings.PageCredentials)
	e.POST("/settings/credentials", s.pages.Settings.PageSaveCredential)
	e.POST("/settings/credentials/:name/remove", s.pages.Settings.PageRemoveCredential)

	// Admins register MCP servers; editors and viewers see
	// their names and status (what the palette's MCP tools depend on).
	v1.GET("/mcp-servers", s.api.Admin.ListMCPServers)
	v1.POST("/mcp-servers", s.api.Admin.AddMCPServer)
	v1.GET("/mcp-servers/:name", s.api.Admin.GetMCPServer)
	v1.PUT("/mcp-servers/:name", s.api.Admin.PutMCPServer)
	v1.DELETE("/mcp-servers/:name", s.api.Admin.RemoveMCPServer)
	e.GET("/settings/mcp-servers", s.pages.Settings.PageMCPServers)
	e.POST("/settings/mcp-servers", s.pages.Settings.PageSaveMCPServer)
	e.POST("/settings/mcp-servers/:name/remove", s.pages.Settings.PageRemoveMCPServer)
	e.GET("/settings/mcp-servers/url-check", s.pages.Settings.FragMCPURLCheck)
}
