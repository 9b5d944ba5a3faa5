package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/vault"
	"github.com/labstack/echo/v4"
)

// credentialRoutes: the admins manage credentials; editors pick them by
// name in nodes; viewers see names only. No route ever answers a value.
func (s *Server) credentialRoutes(e *echo.Echo) {
	v1 := e.Group("/v1")
	v1.GET("/credential-types", s.listCredentialTypes)
	v1.GET("/credentials", s.listCredentials)
	v1.POST("/credentials", s.addCredential)
	v1.GET("/credentials/:name", s.getCredential)
	v1.PATCH("/credentials/:name", s.updateCredential)
	v1.DELETE("/credentials/:name", s.removeCredential)
	e.GET("/settings/credentials", s.pageCredentials)
	e.POST("/settings/credentials", s.pageSaveCredential)
	e.POST("/settings/credentials/:name/remove", s.pageRemoveCredential)
}

// credentialJSON is a credential as the API shows it: never a value. A
// viewer gets the name and type only.
type credentialJSON struct {
	Name      string            `json:"name"`
	Type      string            `json:"type"`
	Public    map[string]string `json:"public,omitempty"`
	Set       []string          `json:"set,omitempty"`
	Chains    []string          `json:"chains,omitempty"`
	AllChains *bool             `json:"all_chains,omitempty"`
	CreatedBy string            `json:"created_by,omitempty"`
	Created   *time.Time        `json:"created,omitempty"`
	UpdatedBy string            `json:"updated_by,omitempty"`
	Updated   *time.Time        `json:"updated,omitempty"`
	LastUsed  *time.Time        `json:"last_used,omitempty"`
}

func toCredentialJSON(cr store.Credential, full bool) credentialJSON {
	out := credentialJSON{Name: cr.Name, Type: cr.Type}
	if !full {
		return out
	}
	all := len(cr.Chains) == 0
	out.Public, out.Set, out.Chains, out.AllChains = cr.Public, cr.Set, cr.Chains, &all
	out.CreatedBy, out.Created = cr.CreatedBy, &cr.Created
	out.UpdatedBy, out.Updated = cr.UpdatedBy, &cr.Updated
	if !cr.LastUsed.IsZero() {
		out.LastUsed = &cr.LastUsed
	}
	if out.Set == nil {
		out.Set = []string{}
	}
	return out
}

// vaultOn answers 503 when the studio has no credentials key.
func (s *Server) vaultOn() error {
	if s.vault == nil || !s.vault.Enabled() {
		return apiError(EUNAVAILABLE, "credentials_off", vault.ErrNoKey.Error(), nil)
	}
	return nil
}

// GET /v1/credential-types: each type with the JSON Schema of its fields.
func (s *Server) listCredentialTypes(c echo.Context) error {
	out := make([]map[string]any, 0, len(credential.Types()))
	for _, t := range credential.Types() {
		out = append(out, map[string]any{"name": t.Name, "title": t.Title, "use": string(t.Use), "schema": t.Schema()})
	}
	return c.JSON(http.StatusOK, map[string]any{"types": out})
}

// GET /v1/credentials[?chain=ID]: with chain, only those that chain may
// use (what a node's select offers).
func (s *Server) listCredentials(c echo.Context) error {
	if s.vault == nil {
		return c.JSON(http.StatusOK, map[string]any{"credentials": []credentialJSON{}})
	}
	list, err := s.vault.List(c.Request().Context())
	if err != nil {
		return storeErr(err, "credentials")
	}
	full := roleAllows(callerOf(c).Role, actEdit)
	chain, filter := c.QueryParams()["chain"]
	out := make([]credentialJSON, 0, len(list))
	for _, cr := range list {
		if filter && !usableBy(cr, firstOf(chain)) {
			continue
		}
		out = append(out, toCredentialJSON(cr, full))
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

func (s *Server) getCredential(c echo.Context) error {
	if s.vault == nil {
		return apiError(ENOTFOUND, "not_found", "credential "+quote(c.Param("name"))+" not found", nil)
	}
	cr, err := s.vault.Get(c.Request().Context(), c.Param("name"))
	if err != nil {
		return storeErr(err, "credential "+quote(c.Param("name")))
	}
	return c.JSON(http.StatusOK, toCredentialJSON(*cr, roleAllows(callerOf(c).Role, actEdit)))
}

// credentialBody is what POST and PATCH take.
type credentialBody struct {
	Name   string         `json:"name"`
	Type   string         `json:"type"`
	Fields map[string]any `json:"fields"`
	Chains *[]string      `json:"chains"`
}

// POST /v1/credentials (admins): 201 with the credential, without values.
func (s *Server) addCredential(c echo.Context) error {
	if err := s.vaultOn(); err != nil {
		return err
	}
	var req credentialBody
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	in := vault.Input{Name: req.Name, Type: req.Type, Values: req.Fields}
	if req.Chains != nil {
		in.Chains = *req.Chains
	}
	cr, err := s.vault.Add(c.Request().Context(), callerOf(c).Name, in)
	if err != nil {
		return credentialErr(err, req.Name)
	}
	s.log.Info("credential added", "credential", cr.Name, "type", cr.Type, "by", callerOf(c).Name)
	return c.JSON(http.StatusCreated, toCredentialJSON(*cr, true))
}

// PATCH /v1/credentials/:name (admins): the fields given replace theirs.
func (s *Server) updateCredential(c echo.Context) error {
	if err := s.vaultOn(); err != nil {
		return err
	}
	var req credentialBody
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	name := c.Param("name")
	if req.Name != "" && req.Name != name {
		return apiError(EINVALID, "invalid_credential", "a credential cannot be renamed (chains name it): add one under the new name", nil)
	}
	cr, err := s.vault.Update(c.Request().Context(), callerOf(c).Name, name, vault.Change{Type: req.Type, Values: req.Fields, Chains: req.Chains})
	if err != nil {
		return credentialErr(err, name)
	}
	s.log.Info("credential changed", "credential", cr.Name, "by", callerOf(c).Name)
	return c.JSON(http.StatusOK, toCredentialJSON(*cr, true))
}

func (s *Server) removeCredential(c echo.Context) error {
	if s.vault == nil {
		return apiError(ENOTFOUND, "not_found", "credential "+quote(c.Param("name"))+" not found", nil)
	}
	name := c.Param("name")
	if err := s.vault.Remove(c.Request().Context(), name); err != nil {
		return storeErr(err, "credential "+quote(name))
	}
	s.log.Info("credential removed", "credential", name, "by", callerOf(c).Name)
	return c.NoContent(http.StatusNoContent)
}

func credentialErr(err error, name string) error {
	switch store.ErrorCode(err) {
	case store.EINVALID:
		return apiError(EINVALID, "invalid_credential", strings.TrimPrefix(err.Error(), "invalid: "), map[string]any{"types": credential.TypeNames()})
	case store.ECONFLICT:
		return apiError(ECONFLICT, "name_taken", "a credential named "+quote(name)+" exists already", nil)
	}
	return storeErr(err, "credential "+quote(name))
}
