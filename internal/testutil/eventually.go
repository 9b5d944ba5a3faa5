// Package testutil holds what every package's tests share: waiting for a
// condition that another goroutine or process makes true.
//
// It imports only the standard library, so any package's tests (engine's
// internal ones included) can use it without an import cycle; under
// internal/ it stays out of the module's public surface. It is not a
// _test.go file because those cannot be imported across packages.
package testutil

import (
	"testing"
	"time"
)

// Eventually calls cond until it returns nil or timeout passes, and then
// fails the test with the last error cond returned, so the message says
// what was still wrong. It is for state that can only be observed by
// looking (a process table, a goroutine count, an HTTP resource); wait on a
// channel or an event instead where the code under test offers one.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := Poll(timeout, cond); err != nil {
		t.Fatalf("not within %v: %v", timeout, err)
	}
}

// Poll is Eventually without the test: it returns cond's last error when
// timeout passes first (nil once cond holds), for callers that report
// the failure themselves (t.Errorf and carry on, or clean up first).
func Poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		err := cond()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		// Back off to 50 ms: quick when the condition is nearly true,
		// cheap when it takes seconds.
		timer.Reset(min(wait, left))
		<-timer.C
		wait = min(2*wait, 50*time.Millisecond)
	}
}
