package ops

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

// The record changes a page's form and an API route both make, each with
// what follows its commit (the doors' change notice, the open-studio
// check, the MCP connections, the log line), so that neither door can
// forget one.

// DeleteChain soft-deletes chain id (base: the version the caller saw; 0:
// any) and tells the doors: its MCP tool, if it had one, goes.
func (s *Env) DeleteChain(ctx context.Context, id string, base int) error {
	if err := s.DB.DeleteChain(ctx, id, base); err != nil {
		return err
	}
	s.Changes.Publish(ctx, httpcore.ChainChange{ChainID: id, Kind: httpcore.ChainDeleted})
	return nil
}

// PublishVersion makes version ch.Version of ch the published one, once
// the caller may publish it (PublishGate) and it would run (a
// runs.InvalidChainError otherwise), and tells the doors: an exposed
// chain's tool now runs and describes this version. base is the version
// the caller saw (0: any).
func (s *Env) PublishVersion(c echo.Context, ch *store.Chain, base int, message string) (*store.Chain, error) {
	ctx := c.Request().Context()
	if err := s.PublishGate(c, ch); err != nil {
		return nil, err
	}
	if err := s.Runs.CheckRun(ctx, ch); err != nil {
		return nil, err
	}
	pub, err := s.DB.PublishChain(ctx, ch.ID, ch.Version, base, httpcore.CallerOf(c).Name, message)
	if err != nil {
		return nil, err
	}
	s.Changes.Publish(ctx, httpcore.ChainChange{ChainID: ch.ID, Kind: httpcore.ChainPublished, MCPExposed: pub.MCPExposed})
	return pub, nil
}

// AddUser adds a user and returns it with its token, the only time the
// token is seen.
func (s *Env) AddUser(c echo.Context, name, role string) (*store.User, string, error) {
	if err := store.CheckUser(name, role); err != nil {
		return nil, "", httpcore.Error(httpcore.EINVALID, "invalid_user", err.Error(), map[string]any{"roles": store.Roles})
	}
	if err := FirstUserMustBeAdmin(c, role); err != nil {
		return nil, "", err
	}
	token, hash, err := httpcore.NewUserToken()
	if err != nil {
		return nil, "", err
	}
	u, err := s.DB.AddUser(c.Request().Context(), name, role, hash)
	if err != nil {
		return nil, "", httpcore.StoreErr(err, "user")
	}
	s.UsersChanged()
	s.Log.Info("user added", "user", u.Name, "role", u.Role, "by", httpcore.CallerOf(c).Name)
	return u, token, nil
}

// SetUserRole changes a user's role. An admin cannot change its own role
// (nor remove itself): that is how a studio loses its last admin.
func (s *Env) SetUserRole(c echo.Context, name, role string) (*store.User, error) {
	if err := store.CheckRole(role); err != nil {
		return nil, httpcore.Error(httpcore.EINVALID, "invalid_role", err.Error(), map[string]any{"roles": store.Roles})
	}
	if err := s.RefuseSelf(c, name, "change your own role"); err != nil {
		return nil, err
	}
	u, err := s.DB.SetUserRole(c.Request().Context(), name, role)
	if err != nil {
		return nil, httpcore.StoreErr(err, "user "+Quote(name))
	}
	s.Log.Info("user role set", "user", u.Name, "role", u.Role, "by", httpcore.CallerOf(c).Name)
	return u, nil
}

// RemoveUser removes a user (not the caller).
func (s *Env) RemoveUser(c echo.Context, name string) error {
	if err := s.RefuseSelf(c, name, "remove yourself"); err != nil {
		return err
	}
	if err := s.DB.RemoveUser(c.Request().Context(), name); err != nil {
		return httpcore.StoreErr(err, "user "+Quote(name))
	}
	s.UsersChanged()
	s.Log.Info("user removed", "user", name, "by", httpcore.CallerOf(c).Name)
	return nil
}

// RemoveMCPServer removes a registered MCP server and closes this
// process's connection to it now (the others' on their next look).
func (s *Env) RemoveMCPServer(c echo.Context, name string) error {
	if err := s.DB.RemoveMCPServer(c.Request().Context(), name); err != nil {
		return err
	}
	s.Log.Info("mcp server removed", "server", name, "by", httpcore.CallerOf(c).Name)
	if s.MCP != nil {
		s.ReloadMCP(c.Request().Context())
	}
	return nil
}
