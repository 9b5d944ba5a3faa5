package testutil

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	err := Poll(5*time.Second, func() error {
		if calls.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls.Load() != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, calls.Load())
	}
}

func TestPollReportsTheLastFailure(t *testing.T) {
	t.Parallel()
	n := 0
	start := time.Now()
	err := Poll(30*time.Millisecond, func() error {
		n++
		return fmt.Errorf("attempt %d", n)
	})
	if err == nil || err.Error() != fmt.Sprintf("attempt %d", n) {
		t.Fatalf("err %v, want the last attempt (%d)", err, n)
	}
	if d := time.Since(start); d < 30*time.Millisecond || d > 2*time.Second {
		t.Fatalf("gave up after %v, want about 30ms", d)
	}
}

// fakeT records a Fatalf instead of ending the goroutine.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}

func TestEventuallyFailsWithTheConditionsMessage(t *testing.T) {
	t.Parallel()
	f := &fakeT{}
	Eventually(f, 10*time.Millisecond, func() error { return errors.New("run r1 still running") })
	if !strings.Contains(f.msg, "run r1 still running") || !strings.Contains(f.msg, "10ms") {
		t.Fatalf("message %q does not say what was still wrong", f.msg)
	}
}
