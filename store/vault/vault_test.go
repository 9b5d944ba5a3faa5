package vault

import (
	"testing"
	"time"
)

// A credential's last use is written once a touchEvery, however many calls
// use it in between.
func TestTouchIsThrottled(t *testing.T) {
	v := &Vault{}
	t0 := time.Unix(1000, 0)
	if !v.shouldTouch("a", t0) {
		t.Fatal("the first use is not written")
	}
	if v.shouldTouch("a", t0.Add(30*time.Second)) {
		t.Fatal("a use 30 s later is written again")
	}
	if !v.shouldTouch("b", t0.Add(30*time.Second)) {
		t.Fatal("another credential's first use is not written")
	}
	if !v.shouldTouch("a", t0.Add(touchEvery)) {
		t.Fatal("a use a minute later is not written")
	}
}
