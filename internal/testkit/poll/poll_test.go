package poll

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	Until(t, 5*time.Second, "the third call", func() bool { return calls.Add(1) == 3 })
	if n := calls.Load(); n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
}

// recorder is a testing.TB that records a failure instead of ending the test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) {
	r.msg = fmt.Sprint(args...)
	panic(r)
}

func (r *recorder) Error(args ...any) { r.msg = fmt.Sprint(args...) }

func TestUntilStateFailsNamingWhatAndTheLastState(t *testing.T) {
	r := &recorder{TB: t}
	start := time.Now()
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		UntilState(r, 50*time.Millisecond, "the moon", func() (bool, string) { return false, "still night" })
	}()
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
		t.Errorf("gave up after %v, before the timeout", elapsed)
	}
	for _, want := range []string{"timed out after 50ms", "waiting for the moon", "(last: still night)"} {
		if !strings.Contains(r.msg, want) {
			t.Errorf("failure %q does not say %q", r.msg, want)
		}
	}
}

func TestWaitReportsWithoutEndingTheGoroutine(t *testing.T) {
	r := &recorder{TB: t}
	if Wait(r, 20*time.Millisecond, "nothing", func() bool { return false }) {
		t.Errorf("Wait: true for a condition that never held")
	}
	if want := "timed out after 20ms waiting for nothing"; r.msg != want {
		t.Errorf("failure %q, want %q", r.msg, want)
	}
	if !Wait(t, time.Second, "true", func() bool { return true }) {
		t.Errorf("Wait: false for a condition that held")
	}
}
