// Package httpcore is what the studio's HTTP doors share: the JSON API and
// pages (package web), the MCP server (web/mcpserver) and the A2E session
// transport (web/a2ehttp). It holds the one table of error codes and the
// API error every door answers with, the caller's identity and what its
// role allows, strict JSON request bodies, the pauses a run waits on and
// who may answer them, and the notice of committed record changes that
// other doors react to. It imports none of the doors.
package httpcore
