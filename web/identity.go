package web

import (
	"context"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// The identities that are not users; store.CheckUser keeps these names
// for them.
var (
	legacyTokenIdentity = httpcore.Identity{Name: "token", Role: store.RoleAdmin, Via: "token"}
	localIdentity       = httpcore.Identity{Name: "local", Role: store.RoleAdmin, Via: "local"}
)

// setCaller records the caller for handlers (callerOf) and for the pages,
// which show who is signed in and hide what the role cannot do.
func setCaller(c echo.Context, id httpcore.Identity, session bool) {
	httpcore.SetCaller(c, id)
	v := views.Viewer{Name: id.Name, Role: id.Role, Local: id.Via == "local", Session: session,
		CanEdit: httpcore.RoleAllows(id.Role, httpcore.ActEdit), CanAnswer: httpcore.RoleAllows(id.Role, httpcore.ActAnswer), CanAdmin: httpcore.RoleAllows(id.Role, httpcore.ActAdmin)}
	req := c.Request()
	c.SetRequest(req.WithContext(views.WithViewer(req.Context(), v)))
}

// identityOf looks the token up among the users; the --token comes first.
// ok is false when no one has this token.
func (s *Server) identityOf(ctx context.Context, token string) (httpcore.Identity, bool, error) {
	if s.tokenMatches(token) {
		return legacyTokenIdentity, true, nil
	}
	if len(token) < MinTokenLength {
		return httpcore.Identity{}, false, nil
	}
	u, err := s.DB.UserByTokenHash(ctx, httpcore.TokenHash(token))
	if err != nil {
		if store.ErrorCode(err) == store.ENOTFOUND {
			return httpcore.Identity{}, false, nil
		}
		return httpcore.Identity{}, false, err
	}
	return httpcore.Identity{Name: u.Name, Role: u.Role, Via: "user", Created: u.Created}, true, nil
}
