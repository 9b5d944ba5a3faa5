package pages

import (
	"net/http"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

func (s *Settings) PageUsers(c echo.Context) error {
	return s.renderUsers(c, http.StatusOK, nil, "")
}

func (s *Settings) renderUsers(c echo.Context, status int, added *views.NewUser, problem string) error {
	us, err := s.DB.ListUsers(c.Request().Context())
	if err != nil {
		return httpcore.StoreErr(err, "users")
	}
	rows := make([]views.UserRow, 0, len(us))
	for _, u := range us {
		rows = append(rows, views.UserRow{Name: u.Name, Role: u.Role, Created: u.Created})
	}
	return RenderPage(c, status, views.UsersPage(rows, store.Roles, added, problem))
}

// problemOf is the message of a refusal, for a form shown again.
func (s *Settings) problemOf(err error) (int, string) {
	ae := s.ErrorFor(err)
	if ae.Kind == httpcore.EINTERNAL {
		return 0, ""
	}
	return ae.Status(), ae.Message
}

// PageAddUser adds a user and shows its token once, on the page itself
// (never in a redirect's URL, which browsers keep in their history).
func (s *Settings) PageAddUser(c echo.Context) error {
	name, role := c.FormValue("name"), c.FormValue("role")
	_, token, err := s.AddUser(c, name, role)
	if err != nil {
		if status, msg := s.problemOf(err); status != 0 {
			return s.renderUsers(c, status, nil, msg)
		}
		return err
	}
	return s.renderUsers(c, http.StatusOK, &views.NewUser{Name: name, Role: role, Token: token}, "")
}

func (s *Settings) PageSetUserRole(c echo.Context) error {
	_, err := s.SetUserRole(c, ops.PageParam(c, "name"), c.FormValue("role"))
	return s.afterUserForm(c, err)
}

func (s *Settings) PageRemoveUser(c echo.Context) error {
	return s.afterUserForm(c, s.RemoveUser(c, ops.PageParam(c, "name")))
}

// afterUserForm shows the list again: a redirect after success (a reload
// does not post twice), the page with the problem otherwise.
func (s *Settings) afterUserForm(c echo.Context, err error) error {
	if err == nil {
		return c.Redirect(http.StatusSeeOther, "/users")
	}
	if status, msg := s.problemOf(err); status != 0 {
		return s.renderUsers(c, status, nil, msg)
	}
	return err
}
