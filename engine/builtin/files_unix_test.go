//go:build unix

package builtin

import (
	"path/filepath"
	"syscall"
	"testing"
)

func TestFilesRefuseFIFO(t *testing.T) {
	t.Parallel()
	ws, read, write := fileFuncs(t, 0)
	must(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	_, err := read(map[string]any{"path": "fifo"})
	wantErr(t, err, `read_file: "fifo" is not a regular file`)
	_, err = write(map[string]any{"path": "fifo", "content": "x"})
	wantErr(t, err, `write_file: "fifo" is not a regular file`)
}
