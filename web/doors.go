package web

import (
	"github.com/chainstudio/studio/web/a2ehttp"
	"github.com/chainstudio/studio/web/mcpserver"
	"github.com/labstack/echo/v4"
)

// The doors other than the JSON API and the pages are packages of their
// own, each with only what it uses: the A2E transport (web/a2ehttp) and the
// MCP server (web/mcpserver). web builds them here and mounts them in
// routes.go, behind its sign-in, roles and error handler.

// The A2E door's names, as web has always exported them.
const (
	MIMENDJSON           = a2ehttp.MIMENDJSON
	HeaderSessionID      = a2ehttp.HeaderSessionID
	CodeResponseTooLarge = a2ehttp.CodeResponseTooLarge
	CodeSessionExpired   = a2ehttp.CodeSessionExpired
)

// buildDoors makes the A2E and MCP doors over the server's dependencies,
// and the notice of committed chain changes they hear.
func (s *Server) buildDoors() {
	cfg := s.cfg
	s.a2e = a2ehttp.New(a2ehttp.Config{
		MaxSessions:        cfg.A2EMaxSessions,
		MaxSessionsPerUser: cfg.A2EMaxSessionsPerUser,
		SessionIdle:        cfg.A2ESessionIdle,
		SessionBytes:       cfg.A2ESessionBytes,
		Heartbeat:          cfg.SSEHeartbeat,
		Limits:             cfg.Limits,
		BodyLimit:          cfg.BodyLimit,
	}, s.Runs, func(c echo.Context, kind string) a2ehttp.StreamWriter { return s.live.OpenStream(c, kind) })
	s.mcp = mcpserver.New(mcpserver.Config{
		MaxSessions:         cfg.MCPMaxSessions,
		MaxSessionsPerUser:  cfg.MCPMaxSessionsPerUser,
		SessionIdle:         cfg.MCPSessionIdle,
		SessionIdleNoStream: cfg.MCPSessionIdleNoStream,
		PublicURL:           cfg.PublicURL,
		Version:             buildVersion(),
		BodyLimit:           cfg.BodyLimit,
		Logger:              s.Log,
	}, s.DB, s.Runs, s.Changes)
}
