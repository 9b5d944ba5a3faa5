package api

import (
	"net/http"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

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
func (s *Admin) GetMe(c echo.Context) error {
	id := httpcore.CallerOf(c)
	var can []string
	for _, a := range []httpcore.Action{httpcore.ActRead, httpcore.ActEdit, httpcore.ActAnswer, httpcore.ActAdmin, httpcore.ActPublish} {
		if httpcore.RoleAllows(id.Role, a) {
			can = append(can, string(a))
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"name": id.Name, "role": id.Role, "via": id.Via, "can": can})
}

func (s *Admin) ListUsers(c echo.Context) error {
	us, err := s.DB.ListUsers(c.Request().Context())
	if err != nil {
		return httpcore.StoreErr(err, "users")
	}
	out := make([]userJSON, 0, len(us))
	for _, u := range us {
		out = append(out, toUserJSON(u))
	}
	return c.JSON(http.StatusOK, map[string]any{"users": out})
}

// addUser makes a user with a new token and answers it once (201).
func (s *Admin) AddUser(c echo.Context) error {
	var req struct {
		Name string `json:"name"`
		Role string `json:"role"`
	}
	if err := httpcore.BindJSON(c, &req); err != nil {
		return err
	}
	u, token, err := s.Env.AddUser(c, req.Name, req.Role)
	if err != nil {
		return err
	}
	out := toUserJSON(*u)
	out.Token = token
	return c.JSON(http.StatusCreated, out)
}

// setUserRole changes a user's role. An admin cannot change its own role
// (nor remove itself): that is how a studio loses its last admin.
func (s *Admin) SetUserRole(c echo.Context) error {
	name := c.Param("name")
	var req struct {
		Role string `json:"role"`
	}
	if err := httpcore.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := s.Env.SetUserRole(c, name, req.Role)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toUserJSON(*u))
}

func (s *Admin) RemoveUser(c echo.Context) error {
	name := c.Param("name")
	if err := s.Env.RemoveUser(c, name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
