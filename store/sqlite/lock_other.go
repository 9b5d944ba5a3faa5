//go:build !unix

package sqlite

import (
	"errors"
	"os"
)

// Without flock the sidecar file only records the owner; a second process
// is not refused.
var errLocked = errors.New("locked")

func flock(*os.File) error { return nil }

func funlock(*os.File) {}
