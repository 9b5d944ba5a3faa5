//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Supported reports whether this platform can run the sandbox: only Linux
// enforces the address-space limit the sandbox relies on.
const Supported = false

// ErrUnsupported is NewPool's error off Linux.
var ErrUnsupported = errors.New("the code sandbox needs Linux (it relies on RLIMIT_AS); code nodes are refused on this platform")

// ChildArg is the hidden subcommand of a sandbox child.
const ChildArg = "__sandbox"

// Child refuses to run off Linux.
func Child(args []string) {
	fmt.Fprintln(os.Stderr, "sandbox:", ErrUnsupported)
	os.Exit(2)
}

// Pool is not available off Linux.
type Pool struct{}

// NewPool returns ErrUnsupported off Linux.
func NewPool(exe string, lim Limits) (*Pool, error) { return nil, ErrUnsupported }

func (p *Pool) Limits() Limits { return Limits{}.WithDefaults() }
func (p *Pool) Warm(int) error { return ErrUnsupported }
func (p *Pool) Run(context.Context, *Request) (*Response, error) {
	return nil, ErrUnsupported
}
func (p *Pool) Close() error { return nil }
