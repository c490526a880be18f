package main

import (
	"strings"
	"testing"
)

func TestPlanFDs(t *testing.T) {
	tests := []struct {
		name      string
		requested int
		hard      uint64
		polls     int
		clients   int
		limited   bool
	}{
		{name: "this machine: 20000 allows 9900 through one edge", requested: 10000, hard: 20000, polls: 9900, clients: 1, limited: true},
		{name: "exactly fits", requested: 9900, hard: 20000, polls: 9900, clients: 1},
		{name: "plenty", requested: 10000, hard: 1 << 20, polls: 10000, clients: 1},
		{name: "small limit", requested: 10000, hard: 4200, polls: 2000, clients: 1, limited: true},
		{name: "odd hard limit rounds down", requested: 10000, hard: 20001, polls: 9900, clients: 1, limited: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := planFDs(tt.requested, tt.hard)
			if err != nil {
				t.Fatal(err)
			}
			if p.Polls != tt.polls || p.Clients != tt.clients || (p.LimitedBy != "") != tt.limited {
				t.Errorf("got %+v, want polls %d clients %d limited %v", p, tt.polls, tt.clients, tt.limited)
			}
			if 2*p.Polls+edgeFDReserve > int(tt.hard) {
				t.Errorf("edge needs %d descriptors, the limit is %d", 2*p.Polls+edgeFDReserve, tt.hard)
			}
			if per := (p.Polls + p.Clients - 1) / p.Clients; per+clientFDReserve > int(tt.hard) {
				t.Errorf("a client holds %d polls, over the limit %d", per, tt.hard)
			}
		})
	}
	if _, err := planFDs(10, 100); err == nil {
		t.Error("hard limit 100: no error")
	}
}

func TestClientsFor(t *testing.T) {
	for _, tt := range []struct {
		polls int
		hard  uint64
		want  int
	}{{9900, 20000, 1}, {19800, 20000, 1}, {19801, 20000, 2}, {25000, 20000, 2}, {40000, 10200, 4}} {
		if got := clientsFor(tt.polls, tt.hard); got != tt.want {
			t.Errorf("%d polls under %d: %d clients, want %d", tt.polls, tt.hard, got, tt.want)
		}
	}
}

func TestFDPlanMessage(t *testing.T) {
	p, _ := planFDs(10000, 20000)
	want := "machine limit: RLIMIT_NOFILE hard=20000 allows 9900 of the 10000 long polls through one edge"
	if got := p.message(); got != want {
		t.Errorf("message:\n got %q\nwant %q", got, want)
	}
	if p.LimitedBy != "RLIMIT_NOFILE hard 20000" {
		t.Errorf("limited_by %q", p.LimitedBy)
	}
	if p, _ := planFDs(100, 20000); p.message() != "" {
		t.Errorf("not limited, message %q", p.message())
	}
}

func TestParsePortRange(t *testing.T) {
	n, err := parsePortRange("32768\t60999\n")
	if err != nil || n != 28232 {
		t.Errorf("got %d, %v; want 28232", n, err)
	}
	for _, bad := range []string{"", "1", "a b", "60999 32768"} {
		if _, err := parsePortRange(bad); err == nil || !strings.Contains(err.Error(), "local port range") {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}
