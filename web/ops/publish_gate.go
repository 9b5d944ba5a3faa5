package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// LimitedCredentials lists the credentials limited to certain chains that
// doc's http nodes name.
func (s *Env) LimitedCredentials(ctx context.Context, doc *chain.Chain) []string {
	if s.Vault == nil || doc == nil {
		return nil
	}
	var out []string
	for _, nd := range doc.Nodes {
		if nd.Kind != chain.KindTool || nd.Name != "http" {
			continue
		}
		auth, _ := nd.Input["auth"].(map[string]any)
		name, _ := auth["credential"].(string)
		if name == "" || slices.Contains(out, name) {
			continue
		}
		if cr, err := s.Vault.Get(ctx, name); err == nil && len(cr.Chains) > 0 {
			out = append(out, name)
		}
	}
	return out
}

// PublishReasons says why publishing ch needs actPublish (none: it does not).
func (s *Env) PublishReasons(ctx context.Context, ch *store.Chain) ([]string, error) {
	var why []string
	if ch.MCPExposed {
		why = append(why, "it is exposed as an MCP tool")
	}
	scheds, err := s.DB.ListSchedules(ctx, ch.ID)
	if err != nil {
		return nil, httpcore.StoreErr(err, "schedules")
	}
	if len(scheds) > 0 {
		why = append(why, "it has a schedule")
	}
	hooks, err := s.DB.ListHooks(ctx, ch.ID)
	if err != nil {
		return nil, httpcore.StoreErr(err, "webhooks")
	}
	if len(hooks) > 0 {
		why = append(why, "it has a webhook")
	}
	for _, name := range s.LimitedCredentials(ctx, ch.Doc) {
		why = append(why, fmt.Sprintf("it uses credential %q, which is limited to certain chains", name))
	}
	return why, nil
}

// PublishGate refuses a caller without actPublish to publish ch when it is
// exposed, triggered or uses a chain-limited credential (403).
func (s *Env) PublishGate(c echo.Context, ch *store.Chain) error {
	if httpcore.RoleAllows(httpcore.CallerOf(c).Role, httpcore.ActPublish) {
		return nil
	}
	why, err := s.PublishReasons(c.Request().Context(), ch)
	if err != nil || len(why) == 0 {
		return err
	}
	return PublishRefusal(c, fmt.Sprintf("publishing chain %q", ch.Name), why)
}

// DraftGate refuses a caller without actPublish to run a version of ch
// other than its published one when it names a chain-limited credential.
func (s *Env) DraftGate(c echo.Context, ch *store.Chain) error {
	if httpcore.RoleAllows(httpcore.CallerOf(c).Role, httpcore.ActPublish) {
		return nil
	}
	ctx := c.Request().Context()
	limited := s.LimitedCredentials(ctx, ch.Doc)
	if len(limited) == 0 {
		return nil
	}
	if pub, err := s.DB.GetPublishedChain(ctx, ch.ID); err == nil && pub.Version == ch.Version {
		return nil
	}
	why := make([]string, len(limited))
	for i, name := range limited {
		why[i] = fmt.Sprintf("it uses credential %q, which is limited to certain chains", name)
	}
	return PublishRefusal(c, fmt.Sprintf("running version %d of chain %q, which is not the published one,", ch.Version, ch.Name), why)
}

func PublishRefusal(c echo.Context, what string, why []string) error {
	id := httpcore.CallerOf(c)
	return httpcore.Error(httpcore.EFORBIDDEN, "publish_required",
		fmt.Sprintf("%s needs the publish permission (roles: %s), and you are %s: %s", what, strings.Join(httpcore.RolesFor(httpcore.ActPublish), ", "), httpcore.Article(id.Role), strings.Join(why, "; ")),
		map[string]any{"roles": httpcore.RolesFor(httpcore.ActPublish), "reasons": why})
}
