package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// watched is a process on a case's path: it must stay up and give back the goroutines
// (go_goroutines on its ops /metrics) and files the case took; an edge writes an access line for
// the case.
type watched struct {
	*process
	metrics string // its ops /metrics
	edge    bool
}

func watchEdge(e *edgeProc) watched {
	return watched{process: e.process, metrics: e.OpsURL + "/metrics", edge: true}
}

func watchAgent(a *agentProc) watched {
	return watched{process: a.process, metrics: a.OpsURL + "/metrics"}
}

// procSet is the processes on a case's path, the entry first.
type procSet []watched

// agentPath is the processes from an entry edge to an agent: the entry, the edge that holds the
// agent when that is another (holder nil: the entry holds it), the agent.
func agentPath(entry, holder *edgeProc, agent *agentProc) procSet {
	ps := procSet{watchEdge(entry)}
	if holder != nil && holder != entry {
		ps = append(ps, watchEdge(holder))
	}
	return append(ps, watchAgent(agent))
}

// procState is what one process holds: its goroutines and open files.
type procState struct{ goroutines, fds int }

func (ps procSet) state(t *testing.T) []procState {
	t.Helper()
	out := make([]procState, len(ps))
	for i, p := range ps {
		n, err := metricSum(p.metrics, "go_goroutines", "")
		if err != nil {
			t.Fatalf("%s's metrics: %v", p.name, err)
		}
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
		if err != nil {
			t.Fatalf("%s's files: %v", p.name, err)
		}
		out[i] = procState{goroutines: int(n), fds: len(entries)}
	}
	return out
}

func (ps procSet) alive(t *testing.T) {
	t.Helper()
	for _, p := range ps {
		select {
		case <-p.exited:
			t.Fatalf("%s exited: %v\n%s", p.name, p.waitErr, p.out.String())
		default:
		}
	}
}

// settled waits up to 2 s for every process to hold no more goroutines and files than before the
// case (two more: an idle connection kept for the next request).
func (ps procSet) settled(t *testing.T, before []procState) {
	t.Helper()
	ps.within(t, before, 2, "before the case")
}

// within waits up to 2 s for every process to hold no more than slack goroutines and 2 files more
// than before; it returns what they hold.
func (ps procSet) within(t *testing.T, before []procState, slack int, when string) (state string) {
	t.Helper()
	poll.UntilState(t, 2*time.Second, "every process back to the goroutines and files it had "+when, func() (bool, string) {
		now := ps.state(t)
		ok := true
		var b strings.Builder
		for i, s := range now {
			ok = ok && s.goroutines <= before[i].goroutines+slack && s.fds <= before[i].fds+2
			fmt.Fprintf(&b, "%s: goroutines %d (before %d), files %d (before %d); ", ps[i].name, s.goroutines, before[i].goroutines, s.fds, before[i].fds)
		}
		state = b.String()
		return ok, state
	})
	return state
}

// edgeGauge is the value of one of e's gauges (edge_ssh_sessions_open, ...).
func edgeGauge(t *testing.T, e *edgeProc, name string) float64 {
	t.Helper()
	n, err := metricSum(e.OpsURL+"/metrics", name, "")
	if err != nil {
		t.Fatalf("edge's metrics: %v", err)
	}
	return n
}

// gaugeBack waits up to 2 s for e's gauge to be back at its value before the case.
func gaugeBack(t *testing.T, e *edgeProc, name string, before float64) {
	t.Helper()
	poll.UntilState(t, 2*time.Second, name+" back to its value before the case", func() (bool, string) {
		n := edgeGauge(t, e, name)
		return n == before, fmt.Sprintf("%v open, %v before", n, before)
	})
}
