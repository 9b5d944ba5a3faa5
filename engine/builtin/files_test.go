package builtin

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func fileFuncs(t *testing.T, maxBytes int64) (ws string, read, write func(map[string]any) (any, error)) {
	t.Helper()
	ws = t.TempDir()
	tools := Tools(Options{Workspace: ws, MaxFileBytes: maxBytes})
	read = func(in map[string]any) (any, error) { return tools["read_file"](context.Background(), in, nil) }
	write = func(in map[string]any) (any, error) { return tools["write_file"](context.Background(), in, nil) }
	return ws, read, write
}

func TestFilesDisabledWithoutWorkspace(t *testing.T) {
	t.Parallel()
	tools := Tools(Options{})
	for _, name := range []string{"read_file", "write_file"} {
		_, err := tools[name](context.Background(), map[string]any{"path": "a.txt", "content": "x"}, nil)
		wantDenied(t, err, name+": file access is disabled: start the studio with --workspace DIR")
	}
}

func TestReadWriteFile(t *testing.T) {
	t.Parallel()
	ws, read, write := fileFuncs(t, 100)
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hi there"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	if err := os.Symlink("hello.txt", filepath.Join(ws, "inner-link")); err != nil {
		t.Fatal(err)
	}

	t.Run("read", func(t *testing.T) {
		out, err := read(map[string]any{"path": "./sub/../hello.txt"})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"path": "hello.txt", "content": "hi there", "size": 8.0}
		if !reflect.DeepEqual(out, want) {
			t.Fatalf("out = %#v, want %#v", out, want)
		}
	})
	t.Run("read through inner symlink", func(t *testing.T) {
		out, err := read(map[string]any{"path": "inner-link"})
		if err != nil {
			t.Fatal(err)
		}
		if out.(map[string]any)["content"] != "hi there" {
			t.Fatalf("out = %#v", out)
		}
	})
	t.Run("write string", func(t *testing.T) {
		out, err := write(map[string]any{"path": "out.txt", "content": "abc"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, map[string]any{"path": "out.txt", "size": 3.0}) {
			t.Fatalf("out = %#v", out)
		}
		out, err = write(map[string]any{"path": "out.txt", "content": "de", "append": true})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, map[string]any{"path": "out.txt", "size": 5.0}) {
			t.Fatalf("append out = %#v", out)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(b) != "abcde" {
			t.Fatalf("file = %q", b)
		}
		if _, err := write(map[string]any{"path": "out.txt", "content": "z"}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(b) != "z" {
			t.Fatalf("file after overwrite = %q", b)
		}
	})
	t.Run("write json with mkdir", func(t *testing.T) {
		out, err := write(map[string]any{"path": "a/b/c.json", "content": map[string]any{"k": []any{1.0}}, "mkdir": true})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, map[string]any{"path": "a/b/c.json", "size": 9.0}) {
			t.Fatalf("out = %#v", out)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "a", "b", "c.json")); string(b) != `{"k":[1]}` {
			t.Fatalf("file = %q", b)
		}
	})
	t.Run("write empty", func(t *testing.T) {
		out, err := write(map[string]any{"path": "empty"})
		if err != nil || !reflect.DeepEqual(out, map[string]any{"path": "empty", "size": 0.0}) {
			t.Fatalf("out, err = %#v, %v", out, err)
		}
	})

	os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("x", 101)), 0o644)
	os.WriteFile(filepath.Join(ws, "ninety.txt"), []byte(strings.Repeat("x", 90)), 0o644)
	for _, tc := range []struct {
		name string
		fn   func(map[string]any) (any, error)
		in   map[string]any
		want string
	}{
		{"read missing path", read, map[string]any{}, `read_file: field "path" is required`},
		{"read path not string", read, map[string]any{"path": 1.0}, `read_file: field "path" must be a string, got number`},
		{"read not found", read, map[string]any{"path": "nope.txt"}, `read_file: "nope.txt" does not exist in the workspace`},
		{"read folder", read, map[string]any{"path": "sub"}, `read_file: "sub" is a folder, not a file`},
		{"read too big", read, map[string]any{"path": "big.txt"}, `read_file: "big.txt" is 101 bytes, larger than the limit of 100 bytes`},
		{"write too big", write, map[string]any{"path": "x", "content": strings.Repeat("y", 101)}, `write_file: content is 101 bytes, larger than the limit of 100 bytes`},
		{"append too big", write, map[string]any{"path": "ninety.txt", "content": strings.Repeat("y", 11), "append": true}, `write_file: appending 11 bytes to "ninety.txt" (90 bytes) would exceed the limit of 100 bytes`},
		{"write no parent", write, map[string]any{"path": "new/x.txt", "content": "y"}, `write_file: folder "new" does not exist in the workspace (set "mkdir": true to create it)`},
		{"write parent is file", write, map[string]any{"path": "hello.txt/x", "content": "y"}, `write_file: "hello.txt" is not a folder`},
		{"write folder", write, map[string]any{"path": "sub", "content": "y"}, `write_file: "sub" is a folder, not a file`},
		{"write workspace", write, map[string]any{"path": ".", "content": "y"}, `write_file: path "." names the workspace folder itself`},
		{"write bad append", write, map[string]any{"path": "x", "append": "yes"}, `write_file: field "append" must be a boolean, got string`},
		{"write bad mkdir", write, map[string]any{"path": "x", "mkdir": 1.0}, `write_file: field "mkdir" must be a boolean, got number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.fn(tc.in)
			wantErr(t, err, tc.want)
		})
	}
}

func TestFilesContainment(t *testing.T) {
	t.Parallel()
	ws, read, write := fileFuncs(t, 0)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644)
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "abs-link")))
	must(t, os.Symlink("../"+filepath.Base(outside)+"/secret.txt", filepath.Join(ws, "rel-link")))
	must(t, os.Symlink(outside, filepath.Join(ws, "dir-link")))
	must(t, os.Symlink(filepath.Join(outside, "not-yet"), filepath.Join(ws, "dangling")))

	for _, tc := range []struct {
		name string
		path string
		want string
	}{
		{"parent escape", "../x", `path "../x" escapes the workspace`},
		{"hidden escape", "a/../../x", `path "a/../../x" escapes the workspace`},
		{"absolute", "/etc/passwd", `path "/etc/passwd" is absolute; give a path relative to the workspace`},
		{"absolute symlink outside", "abs-link", `path "abs-link" resolves outside the workspace`},
		{"relative symlink outside", "rel-link", `path "rel-link" resolves outside the workspace`},
		{"symlinked folder outside", "dir-link/secret.txt", `path "dir-link/secret.txt" resolves outside the workspace`},
		{"new file in symlinked folder", "dir-link/new.txt", `path "dir-link/new.txt" resolves outside the workspace`},
		{"dangling symlink outside", "dangling", `path "dangling" resolves outside the workspace`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(map[string]any{"path": tc.path})
			wantDenied(t, err, "read_file: "+tc.want)
			_, err = write(map[string]any{"path": tc.path, "content": "pwned", "mkdir": true})
			wantDenied(t, err, "write_file: "+tc.want)
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret" {
		t.Fatalf("file outside the workspace was changed: %q", b)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Fatalf("files were created outside the workspace: %v", entries)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
