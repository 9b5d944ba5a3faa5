package tool

import (
	"context"
	"errors"
)

// Secret is a credential resolved for one call: its type and its fields'
// values (strings, or for a headers credential a map of header names and
// values). A tool uses it for the call and never returns it.
type Secret struct {
	Name   string
	Type   string
	Values map[string]any
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
