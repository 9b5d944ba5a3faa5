// Package vault is where credential values are sealed and opened: it takes
// a credential's fields from the page, the API or the CLI, checks them
// against the type's schema, seals the secret ones with the studio's key
// (store/seal) and hands the store only sealed bytes; and it resolves a
// credential for one call of a running chain (tool.Credentials), checking
// that the chain may use it. Nothing it returns to a caller other than the
// resolver carries a value.
package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/seal"
	"github.com/google/uuid"
)

// checkPlain is what the key check seals: opening it proves the key.
const checkPlain = "chain studio credentials key"

var checkAAD = []byte("credential-key-check")

// ErrNoKey is returned by every write when the studio has no credentials key
// (a PostgreSQL studio started without --credentials-key-file).
var ErrNoKey = store.Errorf(store.EUNAVAILABLE, "credentials are off: this studio has no credentials key (--credentials-key-file or STUDIO_CREDENTIALS_KEY)")

// Vault seals, stores and resolves credentials.
type Vault struct {
	db  store.CredentialStore
	log *slog.Logger
	now func() time.Time

	mu     sync.RWMutex
	key    *seal.Key // nil: credentials are off
	reload func() (*seal.Key, error)

	// touched is when this process last recorded each credential's use:
	// "last used" is written at most once a touchEvery, not on every call.
	touchMu sync.Mutex
	touched map[string]time.Time
}

// touchEvery is how stale a credential's "last used" may be: a chain that
// makes thousands of calls writes it once a minute, not thousands of times.
const touchEvery = time.Minute

// shouldTouch reports whether the use of credential id at now is to be
// written, and notes it.
func (v *Vault) shouldTouch(id string, now time.Time) bool {
	v.touchMu.Lock()
	defer v.touchMu.Unlock()
	if last, ok := v.touched[id]; ok && now.Sub(last) < touchEvery {
		return false
	}
	if v.touched == nil || len(v.touched) >= 10_000 {
		v.touched = map[string]time.Time{}
	}
	v.touched[id] = now
	return true
}

// Options configure a vault.
type Options struct {
	// Reload reads the key again, for a rotation made by another process
	// while this one runs; nil: the key never changes.
	Reload func() (*seal.Key, error)
	Logger *slog.Logger
	Now    func() time.Time
}

// Open checks key against the database's key check and returns the vault. A
// database whose credentials were sealed with another key is an error that
// says so; a key given to a database without a check stores one. key nil
// turns credentials off, and is an error when the database holds some.
func Open(ctx context.Context, db store.CredentialStore, key *seal.Key, opts Options) (*Vault, error) {
	v := &Vault{db: db, key: key, reload: opts.Reload, log: opts.Logger, now: opts.Now}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	if v.now == nil {
		v.now = time.Now
	}
	check, err := db.CredentialKeyCheck(ctx)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	switch {
	case key == nil && check != nil:
		return nil, fmt.Errorf("credentials: the database holds credentials sealed with a key, and no key was given (--credentials-key-file or STUDIO_CREDENTIALS_KEY)")
	case key == nil:
		return v, nil
	case check == nil:
		sealed, err := key.Seal([]byte(checkPlain), checkAAD)
		if err != nil {
			return nil, err
		}
		if err := db.SetCredentialKeyCheck(ctx, sealed); err != nil {
			// Another process's first start set one: check ours against it.
			if check, err2 := db.CredentialKeyCheck(ctx); err2 == nil && check != nil {
				return v, KeyOpens(key, check)
			}
			return nil, fmt.Errorf("credentials: %w", err)
		}
		return v, nil
	default:
		return v, KeyOpens(key, check)
	}
}

// KeyOpens reports whether key opens a key check.
func KeyOpens(key *seal.Key, check []byte) error {
	plain, err := key.Open(check, checkAAD)
	if err != nil || string(plain) != checkPlain {
		return fmt.Errorf("credentials: the key does not open this database's credentials (they were sealed with another key)")
	}
	return nil
}

// Enabled reports whether the vault has a key.
func (v *Vault) Enabled() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.key != nil
}

func (v *Vault) currentKey() (*seal.Key, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.key == nil {
		return nil, ErrNoKey
	}
	return v.key, nil
}

// Input is a credential as a person enters it.
type Input struct {
	Name   string
	Type   string
	Values credential.Values
	// Chains lists the ids of the chains that may use it; empty: every chain.
	Chains []string
	// Hosts lists where it may be sent (credential.CleanHosts); empty: its
	// type's default hosts, none for an HTTP credential.
	Hosts []string
	// Budget holds the model calls that use it, per day (zero: none).
	Budget store.DayBudget
}

// Change is an update: the fields given replace theirs (the others stay
// as they are), Chains when not nil replaces the list, Type when set
// changes the type and then needs every required field.
type Change struct {
	Type   string
	Values credential.Values
	Chains *[]string
	Hosts  *[]string        // when not nil, replaces the allowed hosts
	Budget *store.DayBudget // when not nil, replaces the day budget
}

func aad(id, field string) []byte { return []byte(id + "/" + field) }

// Add checks and seals a new credential, made by who.
func (v *Vault) Add(ctx context.Context, who string, in Input) (*store.Credential, error) {
	key, err := v.currentKey()
	if err != nil {
		return nil, err
	}
	if err := store.CheckCredentialName(in.Name); err != nil {
		return nil, err
	}
	typ, err := lookup(in.Type)
	if err != nil {
		return nil, err
	}
	if err := typ.Check(in.Values, true); err != nil {
		return nil, store.Errorf(store.EINVALID, "credential %q: %v", in.Name, err)
	}
	hosts, err := credential.CleanHosts(in.Hosts)
	if err != nil {
		return nil, store.Errorf(store.EINVALID, "credential %q: %v", in.Name, err)
	}
	now := v.now().UTC().Truncate(time.Microsecond)
	c := &store.SealedCredential{Credential: store.Credential{
		ID: uuid.NewString(), Name: in.Name, Type: typ.Name, Chains: cleanChains(in.Chains), Hosts: hosts, Budget: in.Budget,
		CreatedBy: who, Created: now, UpdatedBy: who, Updated: now,
	}}
	if err := fill(key, c, typ, in.Values); err != nil {
		return nil, err
	}
	if err := v.db.AddCredential(ctx, c); err != nil {
		return nil, err
	}
	return &c.Credential, nil
}

// fill splits values into c's public fields and sealed ones.
func fill(key *seal.Key, c *store.SealedCredential, typ credential.Type, values credential.Values) error {
	if c.Public == nil {
		c.Public = map[string]string{}
	}
	if c.Sealed == nil {
		c.Sealed = map[string][]byte{}
	}
	for name, val := range values {
		f, _ := typ.Field(name)
		if !f.Secret {
			c.Public[name] = values.String(name)
			continue
		}
		var plain []byte
		if f.Map {
			b, err := json.Marshal(values.Map(name))
			if err != nil {
				return err
			}
			plain = b
		} else {
			s, _ := val.(string)
			if s == "" { // an optional secret left empty holds nothing
				delete(c.Sealed, name)
				continue
			}
			plain = []byte(s)
		}
		sealed, err := key.Seal(plain, aad(c.ID, name))
		if err != nil {
			return err
		}
		c.Sealed[name] = sealed
	}
	c.Set = c.Set[:0]
	for name := range c.Sealed {
		c.Set = append(c.Set, name)
	}
	slices.Sort(c.Set)
	return nil
}

// Update changes a credential, by who.
func (v *Vault) Update(ctx context.Context, who, name string, ch Change) (*store.Credential, error) {
	key, err := v.currentKey()
	if err != nil {
		return nil, err
	}
	c, err := v.db.GetCredential(ctx, name)
	if err != nil {
		return nil, err
	}
	typ, err := lookup(c.Type)
	if err != nil {
		return nil, err
	}
	if ch.Type != "" && ch.Type != c.Type {
		if typ, err = lookup(ch.Type); err != nil {
			return nil, err
		}
		if err := typ.Check(ch.Values, true); err != nil {
			return nil, store.Errorf(store.EINVALID, "credential %q: changing its type to %s: %v", name, typ.Name, err)
		}
		c.Type, c.Public, c.Sealed = typ.Name, nil, nil
	} else if err := typ.Check(ch.Values, false); err != nil {
		return nil, store.Errorf(store.EINVALID, "credential %q: %v", name, err)
	}
	if err := fill(key, c, typ, ch.Values); err != nil {
		return nil, err
	}
	for _, f := range typ.Fields { // an update cannot empty a required field
		_, pub := c.Public[f.Name]
		_, sec := c.Sealed[f.Name]
		if f.Required && !pub && !sec {
			return nil, store.Errorf(store.EINVALID, "credential %q: field %q is required for a %s credential", name, f.Name, typ.Name)
		}
	}
	if ch.Chains != nil {
		c.Chains = cleanChains(*ch.Chains)
	}
	if ch.Hosts != nil {
		hosts, err := credential.CleanHosts(*ch.Hosts)
		if err != nil {
			return nil, store.Errorf(store.EINVALID, "credential %q: %v", name, err)
		}
		c.Hosts = hosts
	}
	if ch.Budget != nil {
		c.Budget = *ch.Budget
	}
	c.UpdatedBy, c.Updated = who, v.now().UTC().Truncate(time.Microsecond)
	if err := v.db.UpdateCredential(ctx, c); err != nil {
		return nil, err
	}
	return &c.Credential, nil
}

func cleanChains(ids []string) []string {
	out := []string{}
	for _, id := range ids {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func lookup(name string) (credential.Type, error) {
	typ, ok := credential.Lookup(name)
	if !ok {
		return credential.Type{}, store.Errorf(store.EINVALID, "credential type %q: want one of %v", name, credential.TypeNames())
	}
	return typ, nil
}

// Get returns a credential without its values. A record that cannot be
// read is returned as the list shows it (Unreadable set).
func (v *Vault) Get(ctx context.Context, name string) (*store.Credential, error) {
	c, err := v.db.GetCredential(ctx, name)
	if err == nil {
		return &c.Credential, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	list, lerr := v.db.ListCredentials(ctx)
	if lerr != nil {
		return nil, err
	}
	for i := range list {
		if list[i].Name == name && list[i].Unreadable != "" {
			return &list[i], nil
		}
	}
	return nil, err
}

// List lists the credentials without their values.
func (v *Vault) List(ctx context.Context) ([]store.Credential, error) {
	return v.db.ListCredentials(ctx)
}

// Remove deletes a credential.
func (v *Vault) Remove(ctx context.Context, name string) error {
	return v.db.RemoveCredential(ctx, name)
}

// Usable reports, for validation, whether the chain with chainID ("" for a
// chain that is not saved) may use the credential named name: its type,
// whether it exists and can be read, and whether it may be sent anywhere.
func (v *Vault) Usable(ctx context.Context, chainID, name string) chain.CredentialUse {
	c, err := v.db.GetCredential(ctx, name)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return chain.CredentialUse{}
		}
		// A record that exists but does not decode is not "missing".
		if cr, lerr := v.Get(ctx, name); lerr == nil && cr.Unreadable != "" {
			return chain.CredentialUse{Type: cr.Type, Found: true, Allowed: allows(cr, chainID), Unreadable: cr.Unreadable}
		}
		return chain.CredentialUse{Found: true, Unreadable: err.Error()}
	}
	cu := chain.CredentialUse{Type: c.Type, Found: true, Allowed: allows(&c.Credential, chainID)}
	if typ, ok := credential.Lookup(c.Type); ok && len(c.Hosts) == 0 && len(typ.DefaultHosts(credential.Values(stringValues(c.Public)))) == 0 {
		cu.NoHosts = true
	}
	return cu
}

func stringValues(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func allows(c *store.Credential, chainID string) bool {
	return len(c.Chains) == 0 || (chainID != "" && slices.Contains(c.Chains, chainID))
}

// ForChain is the resolver the runs of one chain use (chainID "" for a
// chain that is not saved: it may use only credentials open to every chain).
func (v *Vault) ForChain(chainID string) tool.Credentials {
	return resolver{v: v, chainID: chainID}
}

type resolver struct {
	v       *Vault
	chainID string
}

// Credential opens the credential for one call.
func (r resolver) Credential(ctx context.Context, name string) (*tool.Secret, error) {
	c, err := r.v.db.GetCredential(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.Errorf(store.ENOTFOUND, "credential %q does not exist (an admin adds it in Settings → Credentials)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("credential %q: %w", name, err)
	}
	if !allows(&c.Credential, r.chainID) {
		return nil, store.Errorf(store.EINVALID, "credential %q may not be used by this chain (an admin can allow it in Settings → Credentials)", name)
	}
	values, err := r.v.open(c)
	if err != nil {
		return nil, fmt.Errorf("credential %q: %w", name, err)
	}
	if now := r.v.now(); r.v.shouldTouch(c.ID, now) {
		if err := r.v.db.TouchCredential(ctx, c.ID, now); err != nil {
			r.v.log.Warn("credentials: could not record a use", "credential", name, "err", err)
		}
	}
	return &tool.Secret{Name: c.Name, Type: c.Type, Values: values, Hosts: c.Hosts}, nil
}

// open opens a credential's sealed fields; a value that does not open makes
// the vault read its key again once (another process may have rotated it).
func (v *Vault) open(c *store.SealedCredential) (map[string]any, error) {
	key, err := v.currentKey()
	if err != nil {
		return nil, err
	}
	values, err := openWith(key, c)
	if errors.Is(err, seal.ErrOpen) && v.reload != nil {
		if nk, rerr := v.reload(); rerr == nil {
			if values, err = openWith(nk, c); err == nil {
				v.mu.Lock()
				v.key = nk
				v.mu.Unlock()
				v.log.Info("credentials: the key was rotated; using the new one")
			}
		}
	}
	return values, err
}

func openWith(key *seal.Key, c *store.SealedCredential) (map[string]any, error) {
	typ, err := lookup(c.Type)
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	for k, s := range c.Public {
		values[k] = s
	}
	for field, sealed := range c.Sealed {
		plain, err := key.Open(sealed, aad(c.ID, field))
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", field, err)
		}
		if f, _ := typ.Field(field); f.Map {
			var m map[string]any
			if err := json.Unmarshal(plain, &m); err != nil {
				return nil, fmt.Errorf("field %q: %w", field, err)
			}
			values[field] = m
			continue
		}
		values[field] = string(plain)
	}
	return values, nil
}

// Rotate re-seals every credential under next, in one transaction, and
// makes next the vault's key.
func (v *Vault) Rotate(ctx context.Context, next *seal.Key) error {
	key, err := v.currentKey()
	if err != nil {
		return err
	}
	check, err := next.Seal([]byte(checkPlain), checkAAD)
	if err != nil {
		return err
	}
	err = v.db.ResealCredentials(ctx, func(id, field string, sealed []byte) ([]byte, error) {
		plain, err := key.Open(sealed, aad(id, field))
		if err != nil {
			return nil, err
		}
		return next.Seal(plain, aad(id, field))
	}, check)
	if err != nil {
		return fmt.Errorf("credentials: rotate the key: %w", err)
	}
	v.mu.Lock()
	v.key = next
	v.mu.Unlock()
	return nil
}
