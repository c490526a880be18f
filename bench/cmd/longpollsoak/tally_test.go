package main

import (
	"errors"
	"testing"
	"time"
)

func TestPollTally(t *testing.T) {
	var a pollTally
	a.add(pollOutcome{sent: true, status: 204, upstream: "cell2"})
	a.add(pollOutcome{sent: true, status: 204, upstream: "legacy"})                               // misrouted
	a.add(pollOutcome{sent: true, status: 502, body: `{"error":"upstream_closed","message":""}`}) // edge's own
	a.add(pollOutcome{sent: true, status: 503, upstream: "cell2"})                                // the cell's
	a.add(pollOutcome{err: errors.New("dial: connection refused")})
	var b pollTally
	b.add(pollOutcome{sent: true, status: 204, upstream: "cell2"})
	a.merge(b)
	if a.Sent != 5 || a.Answered != 5 || a.Answered204 != 2 || a.Errors != 4 || a.Edge5xx != 1 {
		t.Errorf("tally %+v", a)
	}
	if a.Status["204"] != 3 || a.Status["502"] != 1 || len(a.Samples) != 4 {
		t.Errorf("status %v samples %q", a.Status, a.Samples)
	}
}

func TestOtherTally(t *testing.T) {
	var o otherTally
	o.add(otherOutcome{status: 200, upstream: "cell2"})
	o.add(otherOutcome{status: 504})
	o.add(otherOutcome{err: errors.New("reset")})
	if o.Sent != 3 || o.OK != 1 || o.Errors != 2 || o.Edge5xx != 1 {
		t.Errorf("tally %+v", o)
	}
}

func TestPace(t *testing.T) {
	start := time.Now()
	job := clientJob{RPS: 1000, Start: start, OtherEnd: start.Add(200 * time.Millisecond)}
	slots := make(chan int, 1000)
	if late := pace(t.Context(), job, slots); late != 0 {
		t.Errorf("late %d with room for all", late)
	}
	if n := len(slots); n != 200 {
		t.Errorf("paced %d requests in 200 ms at 1000/s, want 200", n)
	}
	slots = make(chan int, 10)
	if late := pace(t.Context(), clientJob{RPS: 1000, Start: time.Now(), OtherEnd: time.Now().Add(100 * time.Millisecond)}, slots); late != 90 {
		t.Errorf("late %d with a backlog of 10 and nobody taking, want 90", late)
	}
}
