package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A second owner of one database is refused with the holder's details;
// once the first lets go, it gets the lock. flock locks belong to the open
// file, so two opens in one process conflict like two processes.
func TestLockOneOwner(t *testing.T) {
	db := filepath.Join(t.TempDir(), "studio.db")
	a, err := Lock(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetAddress("http://127.0.0.1:1234"); err != nil {
		t.Fatal(err)
	}
	_, err = Lock(db)
	var iu *InUseError
	if !errors.As(err, &iu) {
		t.Fatalf("second Lock: want *InUseError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"database " + db + " is in use", "pid " + strconv.Itoa(os.Getpid()), "serving http://127.0.0.1:1234", "studio backup"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Lock(db)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	defer b.Close()
	text, _ := os.ReadFile(db + ".lock")
	if strings.Contains(string(text), "serving") {
		t.Errorf("the new owner's file still names the old address:\n%s", text)
	}
}
