// Package examples embeds the example chains, so a new studio has something
// to open at once and tests can check every example validates and runs.
package examples

import (
	"embed"
	"io/fs"
	"path"
	"sort"
)

//go:embed *.json
var files embed.FS

// Example is one example chain document.
type Example struct {
	File string
	Data []byte
}

// All returns every example, sorted by file name.
func All() ([]Example, error) {
	names, err := fs.Glob(files, "*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Example, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Example{File: path.Base(n), Data: b})
	}
	return out, nil
}
