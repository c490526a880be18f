package main

import (
	"io"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.polls != 10000 || o.rps != 2000 || o.dur != time.Minute || o.hold != time.Minute || o.settle != 5*time.Second {
		t.Errorf("defaults: %+v", o)
	}
	o, err = parseOptions([]string{"-quick"}, io.Discard)
	if err != nil || o.polls != quickPolls || o.dur != quickDur || o.hold != quickDur {
		t.Errorf("-quick: %+v, %v", o, err)
	}
	o, err = parseOptions([]string{"-quick", "-n", "50", "-hold", "10s"}, io.Discard)
	if err != nil || o.polls != 50 || o.dur != quickDur || o.hold != 10*time.Second {
		t.Errorf("-quick -n 50 -hold 10s: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"-n", "0"}, {"-rps", "-1"}, {"-d", "10ms"}, {"-hold", "2m"}, {"-settle", "-1s"}, {"extra"}} {
		if _, err := parseOptions(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
