// Package poll is the one poll-until helper of the tests: wait for a condition that something
// else (a goroutine, a process, a server) makes true, and fail the test when it does not in time.
package poll

import (
	"testing"
	"time"
)

// Interval is how long the helpers sleep between two calls of the condition.
const Interval = 10 * time.Millisecond

// Until calls cond every Interval until it returns true. When timeout passes first, it fails the
// test: "timed out after <timeout> waiting for <what>". cond may itself fail the test (a
// process that exited) to stop the wait early.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	UntilState(t, timeout, what, func() (bool, string) { return cond(), "" })
}

// UntilState is Until with a condition that also says what it saw: the failure names the last
// state, "timed out after <timeout> waiting for <what> (last: <state>)".
func UntilState(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	if msg, ok := wait(timeout, what, cond); !ok {
		t.Fatal(msg)
	}
}

// Wait is Until for a goroutine other than the test's, which must not call t.Fatal: a timeout
// is reported with t.Error, and Wait returns false.
func Wait(t testing.TB, timeout time.Duration, what string, cond func() bool) bool {
	t.Helper()
	msg, ok := wait(timeout, what, func() (bool, string) { return cond(), "" })
	if !ok {
		t.Error(msg)
	}
	return ok
}

// wait is the one loop: ok, or the failure message once timeout has passed.
func wait(timeout time.Duration, what string, cond func() (bool, string)) (msg string, ok bool) {
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return "", true
		}
		if time.Now().After(deadline) {
			msg = "timed out after " + timeout.String() + " waiting for " + what
			if state != "" {
				msg += " (last: " + state + ")"
			}
			return msg, false
		}
		time.Sleep(Interval)
	}
}
