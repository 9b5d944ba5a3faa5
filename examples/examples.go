// Package examples embeds the example chains, so a new studio has something
// to open at once and tests can check every example validates and runs.
package examples

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
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

//go:embed templates/*.json
var templateFiles embed.FS

// Template is a chain to start from ("New chain…" → Start from): a real
// chain with its tests, kept apart from the examples a new studio holds.
type Template struct {
	ID   string // the file's name without .json: the API and the form name it
	Data []byte
}

// Templates returns every template, sorted by id.
func Templates() ([]Template, error) {
	names, err := fs.Glob(templateFiles, "templates/*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Template, 0, len(names))
	for _, n := range names {
		b, err := templateFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Template{ID: strings.TrimSuffix(path.Base(n), ".json"), Data: b})
	}
	return out, nil
}
