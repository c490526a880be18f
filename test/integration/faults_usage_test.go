package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/poll"
)

// leakProc is a process whose goroutines (go_goroutines on its ops /metrics) and open files a
// case must give back.
type leakProc struct {
	proc    *process
	metrics string
}

func edgeLeakProc(e *edgeProc) leakProc {
	return leakProc{proc: e.process, metrics: e.OpsURL + "/metrics"}
}

func agentLeakProc(a *agentProc) leakProc {
	return leakProc{proc: a.process, metrics: a.OpsURL + "/metrics"}
}

type procUsage struct{ goroutines, fds int }

func takeUsage(t *testing.T, procs []leakProc) []procUsage {
	t.Helper()
	out := make([]procUsage, len(procs))
	for i, p := range procs {
		n, err := metricSum(p.metrics, "go_goroutines", "")
		if err != nil {
			t.Fatalf("%s's metrics: %v", p.proc.name, err)
		}
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.proc.cmd.Process.Pid))
		if err != nil {
			t.Fatalf("%s's files: %v", p.proc.name, err)
		}
		out[i] = procUsage{goroutines: int(n), fds: len(entries)}
	}
	return out
}

// settle waits up to 2 s for every process to hold no more goroutines and files than before the
// case (two more: an idle connection kept for the next request).
func settle(t *testing.T, procs []leakProc, before []procUsage) {
	t.Helper()
	poll.UntilState(t, 2*time.Second, "every process back to the goroutines and files it had before the case", func() (bool, string) {
		now := takeUsage(t, procs)
		ok := true
		var b strings.Builder
		for i, s := range now {
			ok = ok && s.goroutines <= before[i].goroutines+2 && s.fds <= before[i].fds+2
			fmt.Fprintf(&b, "%s: goroutines %d (before %d), files %d (before %d); ", procs[i].proc.name, s.goroutines, before[i].goroutines, s.fds, before[i].fds)
		}
		return ok, b.String()
	})
}

// outputMarks are the length of each process's output, where a case's lines begin.
func outputMarks(procs []leakProc) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		out[i] = len(p.proc.out.String())
	}
	return out
}
