package pages

import (
	"net/http"
	"strings"

	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/vault"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

func (s *Settings) PageCredentials(c echo.Context) error {
	return s.renderCredentials(c, http.StatusOK, "", c.QueryParam("saved"))
}

func (s *Settings) renderCredentials(c echo.Context, status int, problem, saved string) error {
	ctx := c.Request().Context()
	chains, _, err := s.DB.ListChains(ctx, store.ChainFilter{Limit: 1000})
	if err != nil {
		return httpcore.StoreErr(err, "chains")
	}
	names := map[string]string{}
	choices := make([]views.ChainChoice, 0, len(chains))
	for _, ch := range chains {
		names[ch.ID] = ch.Name
		choices = append(choices, views.ChainChoice{ID: ch.ID, Name: ch.Name})
	}
	var rows []views.CredentialRow
	if s.Vault != nil {
		list, err := s.Vault.List(ctx)
		if err != nil {
			return httpcore.StoreErr(err, "credentials")
		}
		for _, cr := range list {
			j := ops.ToCredentialJSON(cr, true)
			r := views.CredentialRow{Name: cr.Name, Type: cr.Type, Public: cr.Public, Set: cr.Set, UpdatedBy: cr.UpdatedBy, Updated: cr.Updated, LastUsed: cr.LastUsed,
				Hosts: cr.Hosts, DefaultHosts: j.DefaultHosts, Unreadable: cr.Unreadable}
			if base := cr.Public["base_url"]; base != "" && !s.ModelAllowPrivate {
				r.Refused = builtin.ModelURLRefused(base)
			}
			for _, id := range cr.Chains {
				if n, ok := names[id]; ok {
					r.Chains = append(r.Chains, n)
				} else {
					r.Chains = append(r.Chains, id+" (deleted)")
				}
			}
			rows = append(rows, r)
		}
	}
	enabled := s.Vault != nil && s.Vault.Enabled()
	return RenderPage(c, status, views.CredentialsPage(rows, choices, enabled, problem, saved))
}

// PageSaveCredential adds a credential, or changes the one of that name:
// the fields filled in replace theirs, empty ones are kept.
func (s *Settings) PageSaveCredential(c echo.Context) error {
	if err := s.VaultOn(); err != nil {
		return s.afterCredentialForm(c, "", err)
	}
	form, err := c.FormParams()
	if err != nil {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_form", "the form cannot be read: "+err.Error(), nil)
	}
	name, typName := form.Get("name"), form.Get("type")
	typ, ok := credential.Lookup(typName)
	if !ok {
		return s.afterCredentialForm(c, name, store.Errorf(store.EINVALID, "credential type %q: want one of %v", typName, credential.TypeNames()))
	}
	values := credential.Values{}
	for _, f := range typ.Fields {
		raw := form.Get("field." + f.Name)
		if raw == "" {
			continue
		}
		if f.Map {
			m, err := parseHeaderLines(raw)
			if err != nil {
				return s.afterCredentialForm(c, name, store.Errorf(store.EINVALID, "credential %q: field %q: %v", name, f.Name, err))
			}
			values[f.Name] = m
			continue
		}
		values[f.Name] = raw
	}
	chains := []string{}
	if form.Get("all_chains") == "" {
		chains = form["chains"]
	}
	var hosts []string
	for _, line := range strings.Split(strings.ReplaceAll(form.Get("hosts"), "\r\n", "\n"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			hosts = append(hosts, line)
		}
	}
	ctx := c.Request().Context()
	who := httpcore.CallerOf(c).Name
	if _, err := s.Vault.Get(ctx, name); err == nil {
		ch := vault.Change{Type: typ.Name, Values: values, Chains: &chains}
		if len(hosts) > 0 { // empty keeps the hosts it has
			ch.Hosts = &hosts
		}
		_, err = s.Vault.Update(ctx, who, name, ch)
		return s.afterCredentialForm(c, name, err)
	}
	_, err = s.Vault.Add(ctx, who, vault.Input{Name: name, Type: typ.Name, Values: values, Chains: chains, Hosts: hosts})
	return s.afterCredentialForm(c, name, err)
}

// parseHeaderLines reads "Name: value" lines into a map.
func parseHeaderLines(text string) (map[string]any, error) {
	out := map[string]any{}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, errorString("a line without a colon: write Name: value")
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

func (s *Settings) PageRemoveCredential(c echo.Context) error {
	name := ops.PageParam(c, "name")
	var err error
	if s.Vault == nil {
		err = store.ErrNotFound
	} else {
		err = s.Vault.Remove(c.Request().Context(), name)
	}
	if err == nil {
		s.Log.Info("credential removed", "credential", name, "by", httpcore.CallerOf(c).Name)
		return c.Redirect(http.StatusSeeOther, "/settings/credentials")
	}
	return s.afterCredentialForm(c, name, err)
}

// afterCredentialForm: a redirect after success (a reload does not post
// twice), the page with the problem otherwise.
func (s *Settings) afterCredentialForm(c echo.Context, name string, err error) error {
	if err == nil {
		s.Log.Info("credential saved", "credential", name, "by", httpcore.CallerOf(c).Name)
		return c.Redirect(http.StatusSeeOther, "/settings/credentials?saved="+name)
	}
	if status, msg := s.problemOf(ops.CredentialErr(err, name)); status != 0 {
		return s.renderCredentials(c, status, msg, "")
	}
	return err
}
