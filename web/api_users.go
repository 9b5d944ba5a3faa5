package web

import (
	"net/http"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// userRoutes: who am I, and the admins' user management. The
// roles these need are declared in roles.go like every route's.
func (s *Server) userRoutes(e *echo.Echo) {
	v1 := e.Group("/v1")
	v1.GET("/me", s.getMe)
	v1.GET("/users", s.listUsers)
	v1.POST("/users", s.addUser)
	v1.PUT("/users/:name", s.setUserRole)
	v1.DELETE("/users/:name", s.removeUser)
	e.GET("/users", s.pageUsers)
	e.POST("/users", s.pageAddUser)
	e.POST("/users/:name/role", s.pageSetUserRole)
	e.POST("/users/:name/remove", s.pageRemoveUser)
}

// userJSON is a user as the API shows it: never a token or its hash.
type userJSON struct {
	Name    string    `json:"name"`
	Role    string    `json:"role"`
	Created time.Time `json:"created"`
	// Token is in POST /v1/users's answer only: shown once, stored nowhere.
	Token string `json:"token,omitempty"`
}

func toUserJSON(u store.User) userJSON {
	return userJSON{Name: u.Name, Role: u.Role, Created: u.Created}
}

// getMe answers who the caller is and what the role allows, for scripts
// and pages that adapt to it.
func (s *Server) getMe(c echo.Context) error {
	id := callerOf(c)
	var can []string
	for _, a := range []action{actRead, actEdit, actAnswer, actAdmin} {
		if roleAllows(id.Role, a) {
			can = append(can, string(a))
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"name": id.Name, "role": id.Role, "via": id.Via, "can": can})
}

func (s *Server) listUsers(c echo.Context) error {
	us, err := s.db.ListUsers(c.Request().Context())
	if err != nil {
		return storeErr(err, "users")
	}
	out := make([]userJSON, 0, len(us))
	for _, u := range us {
		out = append(out, toUserJSON(u))
	}
	return c.JSON(http.StatusOK, map[string]any{"users": out})
}

// addUser makes a user with a new token and answers it once (201).
func (s *Server) addUser(c echo.Context) error {
	var req struct {
		Name string `json:"name"`
		Role string `json:"role"`
	}
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	if err := store.CheckUser(req.Name, req.Role); err != nil {
		return apiError(EINVALID, "invalid_user", err.Error(), map[string]any{"roles": store.Roles})
	}
	if err := firstUserMustBeAdmin(c, req.Role); err != nil {
		return err
	}
	token, hash, err := NewUserToken()
	if err != nil {
		return err
	}
	u, err := s.db.AddUser(c.Request().Context(), req.Name, req.Role, hash)
	if err != nil {
		return storeErr(err, "user")
	}
	s.forgetOpen()
	s.log.Info("user added", "user", u.Name, "role", u.Role, "by", callerOf(c).Name)
	out := toUserJSON(*u)
	out.Token = token
	return c.JSON(http.StatusCreated, out)
}

// setUserRole changes a user's role. An admin cannot change its own role
// (nor remove itself): that is how a studio loses its last admin.
func (s *Server) setUserRole(c echo.Context) error {
	name := c.Param("name")
	var req struct {
		Role string `json:"role"`
	}
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	if err := store.CheckRole(req.Role); err != nil {
		return apiError(EINVALID, "invalid_role", err.Error(), map[string]any{"roles": store.Roles})
	}
	if err := s.refuseSelf(c, name, "change your own role"); err != nil {
		return err
	}
	u, err := s.db.SetUserRole(c.Request().Context(), name, req.Role)
	if err != nil {
		return storeErr(err, "user "+quote(name))
	}
	s.log.Info("user role set", "user", u.Name, "role", u.Role, "by", callerOf(c).Name)
	return c.JSON(http.StatusOK, toUserJSON(*u))
}

func (s *Server) removeUser(c echo.Context) error {
	name := c.Param("name")
	if err := s.refuseSelf(c, name, "remove yourself"); err != nil {
		return err
	}
	if err := s.db.RemoveUser(c.Request().Context(), name); err != nil {
		return storeErr(err, "user "+quote(name))
	}
	s.forgetOpen()
	s.log.Info("user removed", "user", name, "by", callerOf(c).Name)
	return c.NoContent(http.StatusNoContent)
}

// firstUserMustBeAdmin: on the open studio, the first user ends the open
// mode (everyone needs a token from then on), so a non-admin first user
// would leave the person adding it without a way to manage users.
func firstUserMustBeAdmin(c echo.Context, role string) error {
	if callerOf(c).Via == "local" && role != store.RoleAdmin {
		return apiError(ECONFLICT, "first_user_admin", "the first user must be an admin: once a user exists the studio asks everyone for a token, so add yourself as an admin first", nil)
	}
	return nil
}

func (s *Server) refuseSelf(c echo.Context, name, what string) error {
	if id := callerOf(c); id.Via == "user" && id.Name == name {
		return apiError(ECONFLICT, "self", "you cannot "+what+": ask another admin, or use `studio users` on the studio's host", nil)
	}
	return nil
}

func quote(s string) string { return `"` + s + `"` }
