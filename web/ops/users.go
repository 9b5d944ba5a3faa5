package ops

import (
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// FirstUserMustBeAdmin: on the open studio, the first user ends the open
// mode (everyone needs a token from then on), so a non-admin first user
// would leave the person adding it without a way to manage users.
func FirstUserMustBeAdmin(c echo.Context, role string) error {
	if httpcore.CallerOf(c).Via == "local" && role != store.RoleAdmin {
		return httpcore.Error(httpcore.ECONFLICT, "first_user_admin", "the first user must be an admin: once a user exists the studio asks everyone for a token, so add yourself as an admin first", nil)
	}
	return nil
}

func (s *Env) RefuseSelf(c echo.Context, name, what string) error {
	if id := httpcore.CallerOf(c); id.Via == "user" && id.Name == name {
		return httpcore.Error(httpcore.ECONFLICT, "self", "you cannot "+what+": ask another admin, or use `studio users` on the studio's host", nil)
	}
	return nil
}

func Quote(s string) string { return `"` + s + `"` }
