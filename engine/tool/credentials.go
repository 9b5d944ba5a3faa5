package tool

import (
	"context"
	"errors"
	"net/url"

	"github.com/chainstudio/studio/engine/credential"
)

// Secret is a credential resolved for one call: its type and its fields'
// values (strings, or for a headers credential a map of header names and
// values). A tool uses it for the call and never returns it.
type Secret struct {
	Name   string
	Type   string
	Values map[string]any
	// Hosts is the admin's list of where it may be sent (empty: its type's
	// defaults, credential.Type.DefaultHosts).
	Hosts []string
}

// Allows reports whether the secret may be sent with a request to u: nil,
// or an error that names the credential and the host and wraps ErrDenied
// (and *credential.HostError). Every request a tool attaches the secret to
// is checked, redirects included.
func (s *Secret) Allows(u *url.URL) error {
	typ, ok := credential.Lookup(s.Type)
	if !ok {
		return &deniedError{err: &credential.HostError{Credential: s.Name, Host: u.Host, NoList: true}}
	}
	if err := typ.AllowsURL(s.Name, s.Values, s.Hosts, u); err != nil {
		return &deniedError{err: err}
	}
	return nil
}

// deniedError is a host refusal: its text is the refusal's own; it wraps
// ErrDenied, and errors.As finds the *credential.HostError in it.
type deniedError struct{ err error }

func (e *deniedError) Error() string { return e.err.Error() }
func (e *deniedError) Unwrap() error { return ErrDenied }
func (e *deniedError) As(target any) bool {
	if t, ok := target.(**credential.HostError); ok {
		return errors.As(e.err, t)
	}
	return false
}

// Credentials resolves credentials by name for the run that is calling: the
// host decides which credentials that run's chain may use.
type Credentials interface {
	Credential(ctx context.Context, name string) (*Secret, error)
}

// ErrNoCredentials is returned when a tool needs a credential and the host
// has no credential store (a headless `studio run`, a test without one).
var ErrNoCredentials = errors.New("this host has no credential store")

type credentialsKey struct{}

// WithCredentials returns a context whose tools resolve credentials with c.
func WithCredentials(ctx context.Context, c Credentials) context.Context {
	return context.WithValue(ctx, credentialsKey{}, c)
}

// CredentialsFrom returns the context's credential resolver, or nil.
func CredentialsFrom(ctx context.Context) Credentials {
	c, _ := ctx.Value(credentialsKey{}).(Credentials)
	return c
}
