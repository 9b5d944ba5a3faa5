package web

import (
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"
)

// routeActions declares, in this one place, what every route does as far
// as roles go: "METHOD path" as registered in routes.go → the
// action a caller's role must allow. authorize refuses a registered route
// missing here, and TestEveryRouteEveryRole walks echo's routes, so a route
// added without a line here fails that test.
var routeActions = map[string]action{
	"GET /healthz":         actPublic,
	"GET /livez":           actPublic,
	"GET /readyz":          actPublic,
	"GET /login":           actPublic,
	"POST /login":          actPublic,
	"GET /static/*":        actPublic,
	"POST /logout":         actRead, // any signed-in caller
	"GET /metrics":         actRead,
	"GET /v1/openapi.json": actRead,

	// Pages and their fragments.
	"GET /":                                actRead,
	"GET /fragments/chains":                actRead,
	"POST /fragments/props":                actRead, // renders a form, saves nothing
	"POST /fragments/expr":                 actRead, // renders a preview, saves nothing
	"POST /chains/new":                     actEdit,
	"POST /chains/import":                  actEdit,
	"POST /chains/:id/delete":              actEdit,
	"GET /chains/:id":                      actRead,
	"POST /chains/:id/save":                actEdit,
	"POST /chains/:id/run":                 actEdit,
	"GET /chains/:id/nodes/:node/runnode":  actRead,
	"GET /chains/:id/runs":                 actRead,
	"GET /chains/:id/versions":             actRead,
	"POST /chains/:id/versions/:v/restore": actEdit,
	"POST /chains/:id/versions/:v/publish": actEdit,
	"GET /runs":                            actRead,
	"GET /runs/:id":                        actRead,
	"GET /runs/:id/timeline":               actRead,
	"GET /runs/:id/controls":               actRead,
	"GET /runs/:id/nodes/:node":            actRead,
	"POST /runs/:id/resume":                actResume,
	"POST /runs/:id/rerun":                 actEdit,
	"POST /runs/:id/cancel":                actEdit,
	"GET /runs/:id/diff/:other":            actRead,
	"GET /runs/:id/compare-with":           actRead,
	"GET /runs/:id/compare":                actRead,
	"GET /agents":                          actRead,
	"GET /agents/:name":                    actRead,
	"POST /agents/:name/run":               actEdit,
	"GET /usage":                           actRead,
	"GET /inbox":                           actRead, // answering goes through resume

	"GET /runs/:id/usage":                     actRead,
	"GET /settings/credentials":               actAdmin,
	"POST /settings/credentials":              actAdmin,
	"POST /settings/credentials/:name/remove": actAdmin,
	"GET /settings/mcp-servers":               actAdmin,
	"POST /settings/mcp-servers":              actAdmin,
	"POST /settings/mcp-servers/:name/remove": actAdmin,
	"GET /users":                              actAdmin,
	"POST /users":                             actAdmin,
	"POST /users/:name/role":                  actAdmin,
	"POST /users/:name/remove":                actAdmin,

	// The JSON API.
	"GET /v1/chains":                          actRead,
	"POST /v1/chains":                         actEdit,
	"POST /v1/chains/import":                  actEdit,
	"GET /v1/templates":                       actRead,
	"POST /v1/templates/:id/chains":           actEdit,
	"GET /v1/chains/:id":                      actRead,
	"PUT /v1/chains/:id":                      actEdit,
	"PATCH /v1/chains/:id":                    actEdit,
	"DELETE /v1/chains/:id":                   actEdit,
	"GET /v1/chains/:id/versions":             actRead,
	"POST /v1/chains/:id/versions":            actEdit,
	"POST /v1/chains/:id/publish":             actEdit,
	"GET /v1/chains/:id/versions/:v":          actRead,
	"POST /v1/chains/:id/versions/:v/restore": actEdit,
	"GET /v1/chains/:id/diff":                 actRead,
	"GET /v1/chains/:id/export":               actRead,
	"POST /v1/chains/:id/runs":                actEdit,
	"POST /v1/chains/:id/nodes/:node/run":     actEdit,
	"POST /v1/chains/:id/tests/run":           actEdit,
	"GET /v1/chains/:id/expr/context":         actRead,
	"POST /v1/chains/:id/expr/preview":        actRead, // evaluates, saves nothing
	"POST /v1/chains/:id/extract":             actEdit,
	"POST /v1/validate":                       actRead, // checks a document, saves nothing
	"GET /v1/tools":                           actRead,
	"GET /v1/runs":                            actRead,
	"GET /v1/runs/:id":                        actRead,
	"GET /v1/runs/:id/events":                 actRead,
	"POST /v1/runs/:id/resume":                actResume,
	"POST /v1/runs/:id/cancel":                actEdit,
	"POST /v1/runs/:id/rerun":                 actEdit,
	"GET /v1/runs/:id/diff/:other":            actRead,
	"POST /v1/runs/:id/save-test":             actEdit, // writes the test into the chain
	"GET /v1/runs/:id/nodes/:node/why":        actRead,
	"POST /v1/a2e":                            actEdit, // runs a chain
	"POST /v1/a2e/session":                    actEdit, // the SDK's HTTP transport: its chains run
	"POST /v1/a2e/send":                       actEdit,
	"GET /v1/a2e/stream":                      actEdit,
	"PUT /v1/chains/:id/mcp":                  actAdmin, // exposes a chain as an MCP tool
	"POST /v1/mcp":                            actEdit,  // MCP: a tool call starts a run
	"GET /v1/mcp":                             actEdit,
	"DELETE /v1/mcp":                          actEdit,
	"GET /v1/agents":                          actRead,
	"GET /v1/agents/:name":                    actRead,
	"GET /v1/agents/:name/chain":              actRead,
	"POST /v1/agents/:name/run":               actEdit,
	"GET /v1/agents/:name/models":             actRead, // asks the server the agent file names, for model ids only
	"GET /v1/providers":                       actRead,
	"GET /v1/chains/:id/triggers":             actRead,
	"POST /v1/chains/:id/schedules":           actEdit,
	"PUT /v1/chains/:id/schedules/:sid":       actEdit,
	"DELETE /v1/chains/:id/schedules/:sid":    actEdit,
	"POST /v1/chains/:id/hooks":               actEdit, // answers the new hook's secret once
	"DELETE /v1/chains/:id/hooks/:hid":        actEdit,
	"POST /v1/chains/:id/hooks/:hid/test":     actEdit,   // runs the chain as the hook would
	"POST /v1/hooks/:hook_id":                 actPublic, // authenticated by its HMAC signature, not a role
	"GET /v1/runs/:id/usage":                  actRead,
	"GET /v1/usage":                           actRead,
	"GET /v1/interrupts":                      actRead,
	"GET /v1/me":                              actRead,
	"GET /v1/credential-types":                actRead,
	"GET /v1/credentials":                     actRead, // viewers get names only
	"POST /v1/credentials":                    actAdmin,
	"GET /v1/credentials/:name":               actRead, // never a value
	"PATCH /v1/credentials/:name":             actAdmin,
	"DELETE /v1/credentials/:name":            actAdmin,
	"GET /v1/mcp-servers":                     actRead, // viewers and editors: names and status
	"POST /v1/mcp-servers":                    actAdmin,
	"GET /v1/mcp-servers/:name":               actRead,
	"PUT /v1/mcp-servers/:name":               actAdmin,
	"DELETE /v1/mcp-servers/:name":            actAdmin,
	"GET /v1/users":                           actAdmin,
	"POST /v1/users":                          actAdmin,
	"PUT /v1/users/:name":                     actAdmin,
	"DELETE /v1/users/:name":                  actAdmin,
}

func routeKey(method, path string) string { return method + " " + path }

// authorize refuses a caller whose role does not allow the route's action
// (403 naming the roles that may), and a registered route no line of
// routeActions declares (secure by default: the route×role test names it).
// Unregistered paths and methods fall through to echo's 404 and 405.
func (s *Server) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := routeKey(c.Request().Method, c.Path())
		act, ok := routeActions[key]
		if !ok && c.Request().Method == "HEAD" { // echo answers HEAD with the GET route
			act, ok = routeActions[routeKey("GET", c.Path())]
		}
		if !ok {
			if !s.registered[key] {
				return next(c)
			}
			s.log.Error("route without a declared role: add it to routeActions (web/roles.go)", "route", key)
			return apiError(EFORBIDDEN, "role_undeclared", fmt.Sprintf("%s declares no role, so no one may use it", key), nil)
		}
		if act == actPublic {
			return next(c)
		}
		id := callerOf(c)
		if roleAllows(id.Role, act) {
			return next(c)
		}
		return refuseRole(id, act)
	}
}

// article: "a viewer", "an editor".
func article(role string) string {
	if role == "" {
		return "not signed in"
	}
	if strings.ContainsRune("aeiou", rune(role[0])) {
		return "an " + role
	}
	return "a " + role
}
