package web

import (
	"fmt"

	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// routeActions declares, in this one place, what every route does as far
// as roles go: "METHOD path" as registered in routes.go → the
// action a caller's role must allow. authorize refuses a registered route
// missing here, and TestEveryRouteEveryRole walks echo's routes, so a route
// added without a line here fails that test.
var routeActions = map[string]httpcore.Action{
	"GET /healthz":         httpcore.ActPublic,
	"GET /livez":           httpcore.ActPublic,
	"GET /readyz":          httpcore.ActPublic,
	"GET /login":           httpcore.ActPublic,
	"POST /login":          httpcore.ActPublic,
	"GET /static/*":        httpcore.ActPublic,
	"POST /logout":         httpcore.ActRead, // any signed-in caller
	"GET /metrics":         httpcore.ActRead,
	"GET /v1/openapi.json": httpcore.ActRead,

	// Pages and their fragments.
	"GET /":                                httpcore.ActRead,
	"GET /fragments/chains":                httpcore.ActRead,
	"POST /fragments/props":                httpcore.ActRead, // renders a form, saves nothing
	"POST /fragments/expr":                 httpcore.ActRead, // renders a preview, saves nothing
	"POST /chains/new":                     httpcore.ActEdit,
	"POST /chains/import":                  httpcore.ActEdit,
	"POST /chains/:id/delete":              httpcore.ActEdit,
	"GET /chains/:id":                      httpcore.ActRead,
	"POST /chains/:id/save":                httpcore.ActEdit,
	"POST /chains/:id/run":                 httpcore.ActEdit,
	"GET /chains/:id/nodes/:node/runnode":  httpcore.ActRead,
	"GET /chains/:id/runs":                 httpcore.ActRead,
	"GET /chains/:id/versions":             httpcore.ActRead,
	"POST /chains/:id/versions/:v/restore": httpcore.ActEdit,
	"POST /chains/:id/versions/:v/publish": httpcore.ActEdit,
	"GET /runs":                            httpcore.ActRead,
	"GET /runs/:id":                        httpcore.ActRead,
	"GET /runs/:id/events":                 httpcore.ActRead,
	"GET /runs/:id/timeline":               httpcore.ActRead,
	"GET /runs/:id/controls":               httpcore.ActRead,
	"GET /runs/:id/nodes/:node":            httpcore.ActRead,
	"POST /runs/:id/resume":                httpcore.ActResume,
	"POST /runs/:id/rerun":                 httpcore.ActEdit,
	"POST /runs/:id/cancel":                httpcore.ActEdit,
	"GET /runs/:id/diff/:other":            httpcore.ActRead,
	"GET /runs/:id/compare-with":           httpcore.ActRead,
	"GET /runs/:id/compare":                httpcore.ActRead,
	"GET /agents":                          httpcore.ActRead,
	"GET /agents/:name":                    httpcore.ActRead,
	"GET /agents/new":                      httpcore.ActEdit,
	"POST /agents/new":                     httpcore.ActEdit,
	"GET /agents/:name/edit":               httpcore.ActEdit,
	"POST /agents/:name/edit":              httpcore.ActEdit,
	"POST /agents/:name/import":            httpcore.ActEdit,
	"POST /agents/:name/delete":            httpcore.ActAdmin,
	"POST /agents/:name/run":               httpcore.ActEdit,
	"GET /usage":                           httpcore.ActRead,
	"GET /inbox":                           httpcore.ActRead, // answering goes through resume

	// The editor's node view: a node's data in a run, and the runs to pick.
	"GET /chains/:id/nodes/:node/view":      httpcore.ActRead,
	"GET /chains/:id/nodes/:node/view/runs": httpcore.ActRead,

	"GET /runs/:id/usage":                     httpcore.ActRead,
	"GET /settings/credentials":               httpcore.ActAdmin,
	"POST /settings/credentials":              httpcore.ActAdmin,
	"POST /settings/credentials/:name/remove": httpcore.ActAdmin,
	"GET /settings/mcp-servers":               httpcore.ActAdmin,
	"POST /settings/mcp-servers":              httpcore.ActAdmin,
	"POST /settings/mcp-servers/:name/remove": httpcore.ActAdmin,
	"GET /settings/mcp-servers/url-check":     httpcore.ActAdmin, // the form's warning as the URL is typed
	"GET /users":                              httpcore.ActAdmin,
	"POST /users":                             httpcore.ActAdmin,
	"POST /users/:name/role":                  httpcore.ActAdmin,
	"POST /users/:name/remove":                httpcore.ActAdmin,

	// The JSON API.
	"GET /v1/chains":                           httpcore.ActRead,
	"POST /v1/chains":                          httpcore.ActEdit,
	"POST /v1/chains/import":                   httpcore.ActEdit,
	"GET /v1/templates":                        httpcore.ActRead,
	"POST /v1/templates/:id/chains":            httpcore.ActEdit,
	"GET /v1/chains/:id":                       httpcore.ActRead,
	"PUT /v1/chains/:id":                       httpcore.ActEdit,
	"PATCH /v1/chains/:id":                     httpcore.ActEdit,
	"DELETE /v1/chains/:id":                    httpcore.ActEdit,
	"GET /v1/chains/:id/versions":              httpcore.ActRead,
	"POST /v1/chains/:id/versions":             httpcore.ActEdit,
	"POST /v1/chains/:id/publish":              httpcore.ActEdit,
	"GET /v1/chains/:id/versions/:v":           httpcore.ActRead,
	"POST /v1/chains/:id/versions/:v/restore":  httpcore.ActEdit,
	"GET /v1/chains/:id/diff":                  httpcore.ActRead,
	"GET /v1/chains/:id/export":                httpcore.ActRead,
	"POST /v1/chains/:id/runs":                 httpcore.ActEdit,
	"POST /v1/chains/:id/nodes/:node/run":      httpcore.ActEdit,
	"POST /v1/chains/:id/tests/run":            httpcore.ActEdit,
	"GET /v1/chains/:id/expr/context":          httpcore.ActRead,
	"POST /v1/chains/:id/expr/preview":         httpcore.ActRead, // evaluates, saves nothing
	"POST /v1/chains/:id/extract":              httpcore.ActEdit,
	"POST /v1/validate":                        httpcore.ActRead, // checks a document, saves nothing
	"GET /v1/tools":                            httpcore.ActRead,
	"GET /v1/runs":                             httpcore.ActRead,
	"GET /v1/runs/:id":                         httpcore.ActRead,
	"GET /v1/runs/:id/events":                  httpcore.ActRead,
	"POST /v1/runs/:id/resume":                 httpcore.ActResume,
	"POST /v1/runs/:id/cancel":                 httpcore.ActEdit,
	"POST /v1/runs/:id/rerun":                  httpcore.ActEdit,
	"GET /v1/runs/:id/diff/:other":             httpcore.ActRead,
	"POST /v1/runs/:id/save-test":              httpcore.ActEdit, // writes the test into the chain
	"GET /v1/runs/:id/nodes/:node/why":         httpcore.ActRead,
	"GET /v1/runs/:id/nodes/:node/output":      httpcore.ActRead,
	"GET /v1/runs/:id/nodes/:node/input":       httpcore.ActRead,
	"GET /v1/runs/:id/final-output":            httpcore.ActRead,
	"POST /v1/a2e":                             httpcore.ActEdit, // runs a chain
	"POST /v1/a2e/session":                     httpcore.ActEdit, // the SDK's HTTP transport: its chains run
	"POST /v1/a2e/send":                        httpcore.ActEdit,
	"GET /v1/a2e/stream":                       httpcore.ActEdit,
	"PUT /v1/chains/:id/mcp":                   httpcore.ActAdmin, // exposes a chain as an MCP tool
	"POST /v1/mcp":                             httpcore.ActEdit,  // MCP: a tool call starts a run
	"GET /v1/mcp":                              httpcore.ActEdit,
	"DELETE /v1/mcp":                           httpcore.ActEdit,
	"GET /v1/agents":                           httpcore.ActRead,
	"GET /v1/agents/:name":                     httpcore.ActRead,
	"GET /v1/agents/:name/chain":               httpcore.ActRead,
	"POST /v1/agents/:name/run":                httpcore.ActEdit,
	"GET /v1/agents/:name/models":              httpcore.ActRead, // asks the server the agent file names, for model ids only
	"POST /v1/agents":                          httpcore.ActEdit,
	"PUT /v1/agents/:name":                     httpcore.ActEdit,
	"DELETE /v1/agents/:name":                  httpcore.ActAdmin,
	"GET /v1/agents/:name/versions":            httpcore.ActRead,
	"GET /v1/models":                           httpcore.ActEdit, // asks a server the caller names, with a credential, as a run would
	"GET /v1/providers":                        httpcore.ActRead,
	"GET /v1/chains/:id/triggers":              httpcore.ActRead,
	"POST /v1/chains/:id/schedules":            httpcore.ActEdit,
	"PUT /v1/chains/:id/schedules/:sid":        httpcore.ActEdit,
	"DELETE /v1/chains/:id/schedules/:sid":     httpcore.ActEdit,
	"POST /v1/chains/:id/hooks":                httpcore.ActEdit, // answers the new hook's secret once
	"DELETE /v1/chains/:id/hooks/:hid":         httpcore.ActEdit,
	"POST /v1/chains/:id/hooks/:hid/test":      httpcore.ActEdit,   // runs the chain as the hook would
	"POST /v1/hooks/:hook_id":                  httpcore.ActPublic, // authenticated by its HMAC signature, not a role
	"GET /v1/runs/:id/usage":                   httpcore.ActRead,
	"GET /v1/usage":                            httpcore.ActRead,
	"GET /v1/conversations":                    httpcore.ActRead, // what people wrote to agents: whoever reads run inputs
	"GET /v1/conversations/:scope/:session":    httpcore.ActRead,
	"DELETE /v1/conversations/:scope/:session": httpcore.ActEdit,
	"GET /v1/interrupts":                       httpcore.ActRead,
	"GET /v1/me":                               httpcore.ActRead,
	"GET /v1/credential-types":                 httpcore.ActRead,
	"GET /v1/credentials":                      httpcore.ActRead, // viewers get names only
	"POST /v1/credentials":                     httpcore.ActAdmin,
	"GET /v1/credentials/:name":                httpcore.ActRead, // never a value
	"PATCH /v1/credentials/:name":              httpcore.ActAdmin,
	"DELETE /v1/credentials/:name":             httpcore.ActAdmin,
	"GET /v1/mcp-servers":                      httpcore.ActRead, // viewers and editors: names and status
	"POST /v1/mcp-servers":                     httpcore.ActAdmin,
	"GET /v1/mcp-servers/:name":                httpcore.ActRead,
	"PUT /v1/mcp-servers/:name":                httpcore.ActAdmin,
	"DELETE /v1/mcp-servers/:name":             httpcore.ActAdmin,
	"GET /v1/users":                            httpcore.ActAdmin,
	"POST /v1/users":                           httpcore.ActAdmin,
	"PUT /v1/users/:name":                      httpcore.ActAdmin,
	"DELETE /v1/users/:name":                   httpcore.ActAdmin,
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
			s.Log.Error("route without a declared role: add it to routeActions (web/roles.go)", "route", key)
			return httpcore.Error(httpcore.EFORBIDDEN, "role_undeclared", fmt.Sprintf("%s declares no role, so no one may use it", key), nil)
		}
		if act == httpcore.ActPublic {
			return next(c)
		}
		id := httpcore.CallerOf(c)
		if httpcore.RoleAllows(id.Role, act) {
			return next(c)
		}
		return httpcore.RefuseRole(id, act)
	}
}
