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
	s.pageRoutes(e)
	s.runDiffPageRoutes(e)
	s.loginRoutes(e)
	s.agentPageRoutes(e)
	s.usagePageRoutes(e)

	v1 := e.Group("/v1")
	v1.GET("/openapi.json", s.openAPI)

	v1.GET("/chains", s.listChains)
	v1.POST("/chains", s.createChain)
	v1.POST("/chains/import", s.importChain)
	v1.GET("/templates", s.listTemplates)                  // chains to start from (api_templates.go)
	v1.POST("/templates/:id/chains", s.createFromTemplate) // a new chain from one
	v1.GET("/chains/:id", s.getChain)
	v1.PUT("/chains/:id", s.updateChain)
	v1.PATCH("/chains/:id", s.patchChain) // save only what changed
	v1.DELETE("/chains/:id", s.deleteChain)
	v1.GET("/chains/:id/versions", s.listVersions)
	v1.POST("/chains/:id/versions", s.nameVersion)
	v1.POST("/chains/:id/publish", s.publishChain)
	v1.GET("/chains/:id/versions/:v", s.getVersion)
	v1.POST("/chains/:id/versions/:v/restore", s.restoreVersion)
	v1.GET("/chains/:id/diff", s.diffVersions)
	v1.GET("/chains/:id/export", s.exportChain)
	v1.POST("/chains/:id/runs", s.startRun)
	v1.POST("/chains/:id/nodes/:node/run", s.runNode)
	v1.POST("/chains/:id/tests/run", s.runChainTests)
	v1.GET("/chains/:id/expr/context", s.exprContext)  // the expression editor
	v1.POST("/chains/:id/expr/preview", s.exprPreview) // the expression editor
	v1.POST("/chains/:id/extract", s.extractChain)     // extract to sub-chain
	// triggers (api_triggers.go)
	v1.GET("/chains/:id/triggers", s.listTriggers)
	v1.POST("/chains/:id/schedules", s.createSchedule)
	v1.PUT("/chains/:id/schedules/:sid", s.updateSchedule)
	v1.DELETE("/chains/:id/schedules/:sid", s.deleteSchedule)
	v1.POST("/chains/:id/hooks", s.createHook)
	v1.DELETE("/chains/:id/hooks/:hid", s.deleteHook)
	v1.POST("/chains/:id/hooks/:hid/test", s.testHook) // "Send test event"

	v1.POST("/hooks/:hook_id", s.callHook) // signed, not the token (publicPath)

	v1.POST("/validate", s.validateDocument)
	v1.GET("/tools", s.listTools) // the tool catalogue with schemas (api_tools.go)

	v1.GET("/runs", s.listRuns)
	v1.GET("/runs/:id", s.getRun)
	v1.GET("/runs/:id/events", s.runEvents)
	v1.POST("/runs/:id/resume", s.resumeRun)
	v1.GET("/interrupts", s.listInterrupts) // the approval inbox
	v1.POST("/runs/:id/cancel", s.cancelRun)
	v1.POST("/runs/:id/rerun", s.rerunRun)
	v1.GET("/runs/:id/diff/:other", s.diffRuns)
	v1.POST("/runs/:id/save-test", s.saveRunAsTest)
	v1.GET("/runs/:id/nodes/:node/why", s.runNodeWhy)
	v1.GET("/runs/:id/usage", s.getRunUsage) // tokens and cost
	v1.GET("/usage", s.getUsage)             // per chain and agent over time

	v1.POST("/a2e", s.a2eRun)
	// The A2E SDK's HTTP transport under the base URL /v1/a2e (api_a2e_session.go).
	v1.POST("/a2e/session", s.a2eOpenSession)
	v1.POST("/a2e/send", s.a2eSend)
	v1.GET("/a2e/stream", s.a2eStream)

	// The studio as an MCP server: exposed chains are tools (mcp_server.go).
	v1.PUT("/chains/:id/mcp", s.setChainMCP)
	v1.POST("/mcp", s.mcpEndpoint)
	v1.GET("/mcp", s.mcpEndpoint)
	v1.DELETE("/mcp", s.mcpEndpoint)

	s.agentRoutes(e)
	s.userRoutes(e)
	s.credentialRoutes(e)
	s.mcpServerRoutes(e)
}
