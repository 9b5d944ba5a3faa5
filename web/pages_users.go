package web

import (
	"net/http"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// The Users page (admins): the same operations as /v1/users, as forms.

func (s *Server) pageUsers(c echo.Context) error {
	return s.renderUsers(c, http.StatusOK, nil, "")
}

func (s *Server) renderUsers(c echo.Context, status int, added *views.NewUser, problem string) error {
	us, err := s.db.ListUsers(c.Request().Context())
	if err != nil {
		return storeErr(err, "users")
	}
	rows := make([]views.UserRow, 0, len(us))
	for _, u := range us {
		rows = append(rows, views.UserRow{Name: u.Name, Role: u.Role, Created: u.Created})
	}
	return renderPage(c, status, views.UsersPage(rows, store.Roles, added, problem))
}

// problemOf is the message of a refusal, for a form shown again.
func (s *Server) problemOf(err error) (int, string) {
	ae := s.errorFor(err)
	if ae.Kind == EINTERNAL {
		return 0, ""
	}
	return ae.Status(), ae.Message
}

// pageAddUser adds a user and shows its token once, on the page itself
// (never in a redirect's URL, which browsers keep in their history).
func (s *Server) pageAddUser(c echo.Context) error {
	name, role := c.FormValue("name"), c.FormValue("role")
	err := store.CheckUser(name, role)
	if err == nil {
		err = firstUserMustBeAdmin(c, role)
	}
	var token string
	if err == nil {
		var hash []byte
		if token, hash, err = NewUserToken(); err == nil {
			_, err = s.db.AddUser(c.Request().Context(), name, role, hash)
		}
	}
	if err != nil {
		if status, msg := s.problemOf(err); status != 0 {
			return s.renderUsers(c, status, nil, msg)
		}
		return err
	}
	s.forgetOpen()
	s.log.Info("user added", "user", name, "role", role, "by", callerOf(c).Name)
	return s.renderUsers(c, http.StatusOK, &views.NewUser{Name: name, Role: role, Token: token}, "")
}

func (s *Server) pageSetUserRole(c echo.Context) error {
	name := pageParam(c, "name")
	err := s.refuseSelf(c, name, "change your own role")
	if err == nil {
		_, err = s.db.SetUserRole(c.Request().Context(), name, c.FormValue("role"))
	}
	return s.afterUserForm(c, err)
}

func (s *Server) pageRemoveUser(c echo.Context) error {
	name := pageParam(c, "name")
	err := s.refuseSelf(c, name, "remove yourself")
	if err == nil {
		err = s.db.RemoveUser(c.Request().Context(), name)
	}
	if err == nil {
		s.forgetOpen()
		s.log.Info("user removed", "user", name, "by", callerOf(c).Name)
	}
	return s.afterUserForm(c, err)
}

// afterUserForm shows the list again: a redirect after success (a reload
// does not post twice), the page with the problem otherwise.
func (s *Server) afterUserForm(c echo.Context, err error) error {
	if err == nil {
		return c.Redirect(http.StatusSeeOther, "/users")
	}
	if status, msg := s.problemOf(err); status != 0 {
		return s.renderUsers(c, status, nil, msg)
	}
	return err
}
