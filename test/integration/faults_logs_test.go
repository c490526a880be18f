package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// marks are the length of each process's output, where a case's lines begin.
func (ps procSet) marks() []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = len(p.out.String())
	}
	return out
}

// logged checks the case's access line at the entry edge (the line that holds match), and that
// when the case failed a line names the cause: an edge's access line for the case (the entry's,
// or a holder's for the hop), or an agent's line for a failed upstream request since the case
// began (an agent's log has no request id: its proxy answered the failure, which edge passed on).
func (ps procSet) logged(t *testing.T, marks []int, match string, wantCause bool) {
	t.Helper()
	poll.UntilState(t, 2*time.Second, "the case's access line, and a line with its cause", func() (bool, string) {
		entry, cause := "", !wantCause
		for i, p := range ps {
			out := p.out.String()
			if !p.edge {
				cause = cause || strings.Contains(out[min(marks[i], len(out)):], "upstream request failed")
				continue
			}
			for _, line := range strings.Split(out, "\n") {
				if !strings.Contains(line, "msg=access") || !strings.Contains(line, match) {
					continue
				}
				if i == 0 {
					entry = line
				}
				cause = cause || strings.Contains(line, " cause=")
			}
		}
		return entry != "" && cause, fmt.Sprintf("entry's access line %q, cause found %v", entry, cause)
	})
}

// logHas waits up to 2 s for a line of p's output after mark that holds every part, and returns it.
func logHas(t *testing.T, p *process, mark int, parts ...string) string {
	t.Helper()
	found := ""
	poll.UntilState(t, 2*time.Second, fmt.Sprintf("a line of %s's log with %q", p.name, parts), func() (bool, string) {
		out := p.out.String()
		for _, line := range strings.Split(out[min(mark, len(out)):], "\n") {
			has := true
			for _, s := range parts {
				has = has && strings.Contains(line, s)
			}
			if has {
				found = line
				return true, line
			}
		}
		return false, "no such line"
	})
	return found
}
