package ops

import (
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/vault"
	"github.com/chainstudio/studio/web/httpcore"
)

// CredentialJSON is a credential as the API shows it: never a value. A
// viewer gets the name and type only.
type CredentialJSON struct {
	Name      string            `json:"name"`
	Type      string            `json:"type"`
	Public    map[string]string `json:"public,omitempty"`
	Set       []string          `json:"set,omitempty"`
	Chains    []string          `json:"chains,omitempty"`
	AllChains *bool             `json:"all_chains,omitempty"`
	// Hosts is where it may be sent; DefaultHosts where it goes while
	// Hosts is empty (a provider's API; none for an HTTP credential, which
	// is then sent nowhere: Usable false).
	Hosts        []string `json:"hosts,omitempty"`
	DefaultHosts []string `json:"default_hosts,omitempty"`
	Usable       *bool    `json:"usable,omitempty"`
	// Budget is its day budget (absent: none).
	Budget *store.DayBudget `json:"budget,omitempty"`
	// Unreadable says why the stored record cannot be read.
	Unreadable string     `json:"unreadable,omitempty"`
	CreatedBy  string     `json:"created_by,omitempty"`
	Created    *time.Time `json:"created,omitempty"`
	UpdatedBy  string     `json:"updated_by,omitempty"`
	Updated    *time.Time `json:"updated,omitempty"`
	LastUsed   *time.Time `json:"last_used,omitempty"`
}

func ToCredentialJSON(cr store.Credential, full bool) CredentialJSON {
	out := CredentialJSON{Name: cr.Name, Type: cr.Type, Unreadable: cr.Unreadable}
	if !full {
		return out
	}
	all := len(cr.Chains) == 0
	out.Public, out.Set, out.Chains, out.AllChains = cr.Public, cr.Set, cr.Chains, &all
	out.Hosts = cr.Hosts
	if !cr.Budget.IsZero() {
		b := cr.Budget
		out.Budget = &b
	}
	if typ, ok := credential.Lookup(cr.Type); ok {
		values := credential.Values{}
		for k, v := range cr.Public {
			values[k] = v
		}
		out.DefaultHosts = typ.DefaultHosts(values)
	}
	usable := cr.Unreadable == "" && (len(cr.Hosts) > 0 || len(out.DefaultHosts) > 0)
	out.Usable = &usable
	if out.Hosts == nil {
		out.Hosts = []string{}
	}
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

// VaultOn answers 503 when the studio has no credentials key.
func (s *Env) VaultOn() error {
	if s.Vault == nil || !s.Vault.Enabled() {
		return httpcore.Error(httpcore.EUNAVAILABLE, "credentials_off", vault.ErrNoKey.Error(), nil)
	}
	return nil
}

func CredentialErr(err error, name string) error {
	switch store.ErrorCode(err) {
	case store.EINVALID:
		return httpcore.Error(httpcore.EINVALID, "invalid_credential", strings.TrimPrefix(err.Error(), "invalid: "), map[string]any{"types": credential.TypeNames()})
	case store.ECONFLICT:
		return httpcore.Error(httpcore.ECONFLICT, "name_taken", "a credential named "+Quote(name)+" exists already", nil)
	}
	return httpcore.StoreErr(err, "credential "+Quote(name))
}
