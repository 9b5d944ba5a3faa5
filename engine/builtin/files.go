package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chainstudio/studio/engine/tool"
)

// fileTools implements read_file and write_file. Every access goes through
// an os.Root opened on the workspace, which refuses any path (symlinks
// included) that leaves it; the lexical and symlink checks done beforehand
// only exist to give precise messages.
type fileTools struct {
	workspace string
	maxBytes  int64
}

// resolve validates the `path` input and opens the workspace root. The
// returned rel is the cleaned, workspace-relative path.
func (f *fileTools) resolve(toolName string, in map[string]any) (root *os.Root, rel string, err error) {
	if f.workspace == "" {
		return nil, "", denied("%s: file access is disabled: start the studio with --workspace DIR", toolName)
	}
	p, err := requireString(toolName, in, "path")
	if err != nil {
		return nil, "", err
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.VolumeName(p) != "" {
		return nil, "", denied("%s: path %q is absolute; give a path relative to the workspace", toolName, p)
	}
	rel = filepath.Clean(p)
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, "", denied("%s: path %q escapes the workspace", toolName, p)
	}
	wsReal, err := filepath.EvalSymlinks(f.workspace)
	if err != nil {
		return nil, "", fmt.Errorf("%s: the workspace %q is not accessible: %v", toolName, f.workspace, unwrapPathError(err))
	}
	if err := checkSymlinks(wsReal, rel); err != nil {
		return nil, "", denied("%s: path %q %s", toolName, p, err.Error())
	}
	root, err = os.OpenRoot(wsReal)
	if err != nil {
		return nil, "", fmt.Errorf("%s: the workspace %q cannot be opened: %v", toolName, f.workspace, unwrapPathError(err))
	}
	return root, rel, nil
}

// checkSymlinks resolves the longest existing prefix of wsReal/rel and
// reports an error when it lies outside wsReal.
func checkSymlinks(wsReal, rel string) error {
	full := filepath.Join(wsReal, rel)
	for cand := full; ; cand = filepath.Dir(cand) {
		real, err := filepath.EvalSymlinks(cand)
		if err == nil {
			if !within(wsReal, real) {
				return fmt.Errorf("resolves outside the workspace (to %s) through a symbolic link", real)
			}
			return nil
		}
		if cand == wsReal || cand == filepath.Dir(cand) {
			return nil
		}
	}
}

// within reports whether path is base or lies beneath it (both cleaned, absolute).
func within(base, path string) bool {
	if path == base {
		return true
	}
	r, err := filepath.Rel(base, path)
	if err != nil {
		return false
	}
	return r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// opError turns an error from an os.Root operation into a precise message.
func opError(toolName, rel string, err error) error {
	inner := unwrapPathError(err)
	switch {
	case strings.Contains(inner.Error(), "path escapes from parent"):
		return denied("%s: path %q resolves outside the workspace", toolName, filepath.ToSlash(rel))
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %q does not exist in the workspace", toolName, filepath.ToSlash(rel))
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: %q: permission denied by the file system", toolName, filepath.ToSlash(rel))
	}
	return fmt.Errorf("%s: %q: %v", toolName, filepath.ToSlash(rel), inner)
}

// read implements read_file: {"path"} → {"path", "content", "size"}.
func (f *fileTools) read(_ context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	const name = "read_file"
	root, rel, err := f.resolve(name, in)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	slash := filepath.ToSlash(rel)

	info, err := root.Stat(rel)
	if err != nil {
		return nil, opError(name, rel, err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%s: %q is a folder, not a file", name, slash)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %q is not a regular file (mode %s)", name, slash, info.Mode().Type())
	}
	if info.Size() > f.maxBytes {
		return nil, fmt.Errorf("%s: %q is %d bytes, larger than the limit of %d bytes", name, slash, info.Size(), f.maxBytes)
	}
	file, err := root.Open(rel)
	if err != nil {
		return nil, opError(name, rel, err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, f.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading %q: %v", name, slash, unwrapPathError(err))
	}
	if int64(len(data)) > f.maxBytes {
		return nil, fmt.Errorf("%s: %q is larger than the limit of %d bytes", name, slash, f.maxBytes)
	}
	return map[string]any{"path": slash, "content": string(data), "size": float64(len(data))}, nil
}

// write implements write_file: {"path", "content", "append", "mkdir"} → {"path", "size"}.
func (f *fileTools) write(_ context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	const name = "write_file"
	var content []byte
	switch c := in["content"].(type) {
	case nil:
	case string:
		content = []byte(c)
	default:
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("%s: field \"content\" cannot be encoded as JSON: %v", name, err)
		}
		content = b
	}
	appendMode, err := getBool(name, in, "append")
	if err != nil {
		return nil, err
	}
	mkdir, err := getBool(name, in, "mkdir")
	if err != nil {
		return nil, err
	}
	if int64(len(content)) > f.maxBytes {
		return nil, fmt.Errorf("%s: content is %d bytes, larger than the limit of %d bytes", name, len(content), f.maxBytes)
	}
	root, rel, err := f.resolve(name, in)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	slash := filepath.ToSlash(rel)
	if rel == "." {
		return nil, fmt.Errorf("%s: path %q names the workspace folder itself, not a file", name, in["path"])
	}

	parent := filepath.Dir(rel)
	if parent != "." {
		if mkdir {
			if err := root.MkdirAll(parent, 0o755); err != nil {
				return nil, opError(name, parent, err)
			}
		} else if info, err := root.Stat(parent); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: folder %q does not exist in the workspace (set \"mkdir\": true to create it)", name, filepath.ToSlash(parent))
			}
			return nil, opError(name, parent, err)
		} else if !info.IsDir() {
			return nil, fmt.Errorf("%s: %q is not a folder", name, filepath.ToSlash(parent))
		}
	}

	if info, err := root.Stat(rel); err == nil {
		if info.IsDir() {
			return nil, fmt.Errorf("%s: %q is a folder, not a file", name, slash)
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: %q is not a regular file (mode %s)", name, slash, info.Mode().Type())
		}
		if appendMode && info.Size()+int64(len(content)) > f.maxBytes {
			return nil, fmt.Errorf("%s: appending %d bytes to %q (%d bytes) would exceed the limit of %d bytes", name, len(content), slash, info.Size(), f.maxBytes)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, opError(name, rel, err)
	}

	flags := os.O_WRONLY | os.O_CREATE
	if appendMode {
		flags |= os.O_APPEND
	} else {
		flags |= os.O_TRUNC
	}
	file, err := root.OpenFile(rel, flags, 0o644)
	if err != nil {
		return nil, opError(name, rel, err)
	}
	if _, err := file.Write(content); err != nil {
		file.Close()
		return nil, fmt.Errorf("%s: writing %q: %v", name, slash, unwrapPathError(err))
	}
	info, statErr := file.Stat()
	if err := file.Close(); err != nil {
		return nil, fmt.Errorf("%s: writing %q: %v", name, slash, unwrapPathError(err))
	}
	size := int64(len(content))
	if statErr == nil {
		size = info.Size()
	}
	return map[string]any{"path": slash, "size": float64(size)}, nil
}
