package sqlite

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// One process owns a database: two servers on one file would each take the
// other's live runs for runs interrupted by a restart, and resume them
// twice. The owner holds an advisory lock on a sidecar file, <db>.lock,
// which says who it is. The lock is not on the database file itself:
// SQLite uses POSIX locks there, and closing any descriptor of the file
// would drop them. The lock ends with the process, however it ends, so a
// crash leaves no stale lock; the file stays, and is reused.

// Owner is the lock on a database and what it tells a second process.
type Owner struct {
	f    *os.File
	path string
	info string
}

// InUseError reports a database owned by another process.
type InUseError struct {
	DB     string
	Holder string // the lock file's text: pid, host, start, address
}

func (e *InUseError) Error() string {
	h := strings.TrimSpace(e.Holder)
	if h == "" {
		h = "a process that has not written its details yet"
	}
	return fmt.Sprintf("database %s is in use by another studio (%s); stop it or use another --db (studio backup works while it runs)",
		e.DB, strings.ReplaceAll(h, "\n", ", "))
}

// Lock takes the database at path for this process, or returns an
// *InUseError naming the holder. Release it with Close.
func Lock(path string) (*Owner, error) {
	lp := path + ".lock"
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lp, err)
	}
	if err := flock(f); err != nil {
		holder, _ := os.ReadFile(lp)
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, &InUseError{DB: path, Holder: string(holder)}
		}
		return nil, fmt.Errorf("lock %s: %w", lp, err)
	}
	host, _ := os.Hostname()
	o := &Owner{f: f, path: lp,
		info: "pid " + strconv.Itoa(os.Getpid()) + "\nhost " + host + "\nstarted " + time.Now().UTC().Format(time.RFC3339)}
	if err := o.write(""); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// SetAddress records the address the owner serves at, for the message a
// second process shows.
func (o *Owner) SetAddress(url string) error { return o.write(url) }

func (o *Owner) write(url string) error {
	text := o.info
	if url != "" {
		text += "\nserving " + url
	}
	text += "\n"
	if err := o.f.Truncate(0); err != nil {
		return err
	}
	_, err := o.f.WriteAt([]byte(text), 0)
	return err
}

// Close releases the lock.
func (o *Owner) Close() error {
	if o == nil || o.f == nil {
		return nil
	}
	funlock(o.f)
	err := o.f.Close()
	o.f = nil
	return err
}
