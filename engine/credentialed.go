package engine

import (
	"context"
	"sync/atomic"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/tool"
)

// sentCredentials notes whether a node's call resolved a credential that a
// request carries to a server (an http auth): what that server answers may
// echo it, so the node's outcome is marked Credentialed and hosts can keep
// its output from those who may not see credentials. Model keys are not
// counted: a model's reply is generated text, and the key goes only to the
// provider's host.
type sentCredentials struct {
	tool.Credentials
	used atomic.Bool
}

// watchCredentials wraps ctx's credential resolver (if any) to note use.
func watchCredentials(ctx context.Context) (context.Context, *sentCredentials) {
	c := tool.CredentialsFrom(ctx)
	if c == nil {
		return ctx, nil
	}
	s := &sentCredentials{Credentials: c}
	return tool.WithCredentials(ctx, s), s
}

func (s *sentCredentials) Credential(ctx context.Context, name string) (*tool.Secret, error) {
	sec, err := s.Credentials.Credential(ctx, name)
	if err == nil && sec != nil {
		if typ, ok := credential.Lookup(sec.Type); ok && typ.Use == credential.UseHTTP {
			s.used.Store(true)
		}
	}
	return sec, err
}

func (s *sentCredentials) any() bool { return s != nil && s.used.Load() }
