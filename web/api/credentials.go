package api

import (
	"net/http"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/vault"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// GET /v1/credential-types: each type with the JSON Schema of its fields.
func (s *Admin) ListCredentialTypes(c echo.Context) error {
	out := make([]map[string]any, 0, len(credential.Types()))
	for _, t := range credential.Types() {
		out = append(out, map[string]any{"name": t.Name, "title": t.Title, "use": string(t.Use), "schema": t.Schema()})
	}
	return c.JSON(http.StatusOK, map[string]any{"types": out})
}

// GET /v1/credentials[?chain=ID]: with chain, only those that chain may
// use (what a node's select offers).
func (s *Admin) ListCredentials(c echo.Context) error {
	if s.Vault == nil {
		return c.JSON(http.StatusOK, map[string]any{"credentials": []ops.CredentialJSON{}})
	}
	list, err := s.Vault.List(c.Request().Context())
	if err != nil {
		return httpcore.StoreErr(err, "credentials")
	}
	full := httpcore.RoleAllows(httpcore.CallerOf(c).Role, httpcore.ActEdit)
	doc, filter := c.QueryParams()["chain"]
	out := make([]ops.CredentialJSON, 0, len(list))
	for _, cr := range list {
		if filter && !usableBy(cr, firstOf(doc)) {
			continue
		}
		out = append(out, ops.ToCredentialJSON(cr, full))
	}
	return c.JSON(http.StatusOK, map[string]any{"credentials": out})
}

func firstOf(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func usableBy(cr store.Credential, chainID string) bool {
	if len(cr.Chains) == 0 {
		return true
	}
	for _, id := range cr.Chains {
		if id == chainID && chainID != "" {
			return true
		}
	}
	return false
}

func (s *Admin) GetCredential(c echo.Context) error {
	if s.Vault == nil {
		return httpcore.Error(httpcore.ENOTFOUND, "not_found", "credential "+ops.Quote(c.Param("name"))+" not found", nil)
	}
	cr, err := s.Vault.Get(c.Request().Context(), c.Param("name"))
	if err != nil {
		return httpcore.StoreErr(err, "credential "+ops.Quote(c.Param("name")))
	}
	return c.JSON(http.StatusOK, ops.ToCredentialJSON(*cr, httpcore.RoleAllows(httpcore.CallerOf(c).Role, httpcore.ActEdit)))
}

// credentialBody is what POST and PATCH take.
type credentialBody struct {
	Name   string           `json:"name"`
	Type   string           `json:"type"`
	Fields map[string]any   `json:"fields"`
	Chains *[]string        `json:"chains"`
	Hosts  *[]string        `json:"hosts"`
	Budget *store.DayBudget `json:"budget"`
}

// POST /v1/credentials (admins): 201 with the credential, without values.
func (s *Admin) AddCredential(c echo.Context) error {
	if err := s.VaultOn(); err != nil {
		return err
	}
	var req credentialBody
	if err := httpcore.BindJSON(c, &req); err != nil {
		return err
	}
	if err := ops.CheckDayBudget(req.Budget, s.Prices); err != nil {
		return err
	}
	in := vault.Input{Name: req.Name, Type: req.Type, Values: req.Fields}
	if req.Budget != nil {
		in.Budget = *req.Budget
	}
	if req.Chains != nil {
		in.Chains = *req.Chains
	}
	if req.Hosts != nil {
		in.Hosts = *req.Hosts
	}
	cr, err := s.Vault.Add(c.Request().Context(), httpcore.CallerOf(c).Name, in)
	if err != nil {
		return ops.CredentialErr(err, req.Name)
	}
	s.Log.Info("credential added", "credential", cr.Name, "type", cr.Type, "by", httpcore.CallerOf(c).Name)
	return c.JSON(http.StatusCreated, ops.ToCredentialJSON(*cr, true))
}

// PATCH /v1/credentials/:name (admins): the fields given replace theirs.
func (s *Admin) UpdateCredential(c echo.Context) error {
	if err := s.VaultOn(); err != nil {
		return err
	}
	var req credentialBody
	if err := httpcore.BindJSON(c, &req); err != nil {
		return err
	}
	if err := ops.CheckDayBudget(req.Budget, s.Prices); err != nil {
		return err
	}
	name := c.Param("name")
	if req.Name != "" && req.Name != name {
		return httpcore.Error(httpcore.EINVALID, "invalid_credential", "a credential cannot be renamed (chains name it): add one under the new name", nil)
	}
	cr, err := s.Vault.Update(c.Request().Context(), httpcore.CallerOf(c).Name, name, vault.Change{Type: req.Type, Values: req.Fields, Chains: req.Chains, Hosts: req.Hosts, Budget: req.Budget})
	if err != nil {
		return ops.CredentialErr(err, name)
	}
	s.Log.Info("credential changed", "credential", cr.Name, "by", httpcore.CallerOf(c).Name)
	return c.JSON(http.StatusOK, ops.ToCredentialJSON(*cr, true))
}

func (s *Admin) RemoveCredential(c echo.Context) error {
	if s.Vault == nil {
		return httpcore.Error(httpcore.ENOTFOUND, "not_found", "credential "+ops.Quote(c.Param("name"))+" not found", nil)
	}
	name := c.Param("name")
	if err := s.Vault.Remove(c.Request().Context(), name); err != nil {
		return httpcore.StoreErr(err, "credential "+ops.Quote(name))
	}
	s.Log.Info("credential removed", "credential", name, "by", httpcore.CallerOf(c).Name)
	return c.NoContent(http.StatusNoContent)
}
