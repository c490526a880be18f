package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Descriptors: edge holds two per long poll (the runner's connection and its own to the cell),
// the cell and a client process one each. The reserves cover listeners, log files, the other
// traffic's keep-alive connections (otherConns on each side) and the Go runtime's own.
const (
	edgeFDsPerPoll  = 2
	edgeFDReserve   = 200
	clientFDReserve = 200
)

// fdPlan is how many long polls fit under RLIMIT_NOFILE and how many client processes hold them.
type fdPlan struct {
	Requested int
	Polls     int    // what fits through one edge
	Clients   int    // client processes, each within the limit
	Hard      uint64 // RLIMIT_NOFILE hard limit
	LimitedBy string // "" when Polls == Requested
}

// planFDs fits the requested polls under the hard limit, which every process here shares (the
// children inherit it and it cannot be raised).
func planFDs(requested int, hard uint64) (fdPlan, error) {
	p := fdPlan{Requested: requested, Polls: requested, Hard: hard}
	if hard < edgeFDReserve+edgeFDsPerPoll || hard < clientFDReserve+1 {
		return p, fmt.Errorf("RLIMIT_NOFILE hard limit %d is too low for any long poll", hard)
	}
	if fit := int((hard - edgeFDReserve) / edgeFDsPerPoll); fit < requested {
		p.Polls = fit
		p.LimitedBy = fmt.Sprintf("RLIMIT_NOFILE hard %d", hard)
	}
	p.Clients = clientsFor(p.Polls, hard)
	return p, nil
}

// clientsFor is how many client processes hold polls connections under the hard limit. With
// one limit for every process a client holds half of edge's descriptors, so one is enough; the
// split is there for a limit edge gets raised above its clients'.
func clientsFor(polls int, hard uint64) int {
	perClient := int(hard - clientFDReserve)
	return (polls + perClient - 1) / perClient
}

// message is the line the command prints when the machine limits the polls.
func (p fdPlan) message() string {
	if p.LimitedBy == "" {
		return ""
	}
	return fmt.Sprintf("machine limit: RLIMIT_NOFILE hard=%d allows %d of the %d long polls through one edge", p.Hard, p.Polls, p.Requested)
}

// ephemeralPorts is the size of the kernel's local port range. Connections to different
// destination addresses may share a local port, so the cells listen on 127.0.0.2 and 127.0.0.3
// and edge on 127.0.0.1: each side of edge needs the polls alone to fit in the range.
func ephemeralPorts() (int, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, fmt.Errorf("read local port range: %w", err)
	}
	return parsePortRange(string(b))
}

func parsePortRange(s string) (int, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, fmt.Errorf("local port range %q: want two numbers", strings.TrimSpace(s))
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || hi < lo {
		return 0, fmt.Errorf("local port range %q: want two numbers, low first", strings.TrimSpace(s))
	}
	return hi - lo + 1, nil
}
