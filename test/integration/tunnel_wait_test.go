package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestTunnelWaitForAgent: a request for an agent that is not connected waits, and is served as
// soon as the agent connects, to this edge or another; an agent that never connects gets 504
// naming it after agents.wait.
func TestTunnelWaitForAgent(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 2)

	type result struct {
		status int
		body   []byte
		err    error
		took   time.Duration
	}
	never := make(chan result, 1)
	go func() {
		start := time.Now()
		status, _, body, err := c.get(c.edges[1], proxyPath("a9", 1, "/echo"))
		never <- result{status, body, err, time.Since(start)}
	}()

	for _, tc := range []struct {
		name          string
		id            string
		entry, holder int
	}{
		{"agent connects to the entry edge", "a1", 0, 0},
		{"agent connects to another edge", "a2", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := startUpstream(t, tc.id)
			entry, holder := c.edges[tc.entry], c.edges[tc.holder]
			loops := func() float64 {
				v, _ := metricSum(entry.OpsURL+"/metrics", "edge_registry_wait_loops_started_total", "")
				return v
			}
			before := loops()
			sent := time.Now()
			type answered struct {
				a   answer
				err error
				at  time.Time
			}
			res := make(chan answered, 1)
			go func() {
				a, err := trySendAPI(c, entry, tc.id, up)
				res <- answered{a, err, time.Now()}
			}()
			// In order: the request waits, then the agent connects. The request gives up after
			// agents.wait, so that is the bound on seeing it wait.
			poll.Until(t, agentWait, "the request to wait for "+tc.id, func() bool { return loops() > before })

			agent := c.startAgent(tc.id, holder.PublicURL, up)
			// Poll the agent's /healthz until it turns 200 or the answer comes, then wait for the
			// answer.
			var healthy time.Time
			var got answered
		poll:
			for healthy.IsZero() {
				select {
				case got = <-res:
					break poll
				default:
				}
				if agent.connected() {
					healthy = time.Now()
				}
			}
			if got.at.IsZero() {
				got = <-res
			}
			if got.err != nil {
				t.Fatalf("%s -> %s: %v", c.edgeName(entry), tc.id, got.err)
			}
			wantServedBy(t, got.a, tc.id)
			conns, err := c.connections(holder, tc.id)
			if err != nil || len(conns) != 1 {
				t.Fatalf("connections of %s: %+v %v", tc.id, conns, err)
			}
			accepted := conns[0].ConnectedAt
			fromAccept := got.at.Sub(accepted)
			// The connect event wakes the request at once (the slow poll only covers lost
			// messages); how soon is logged, not asserted: a busy machine delays anything.
			t.Logf("wake-up delay: %v from the edge accepting %s's connection (connections API connected_at) to the response; "+
				"agent /healthz saw 200 %v before the response; the request waited %v in all",
				fromAccept.Round(time.Millisecond), tc.id, durationOrNever(healthy, got.at), got.at.Sub(sent).Round(time.Millisecond))
		})
	}

	t.Run("agent never connects", func(t *testing.T) {
		r := <-never
		if r.err != nil {
			t.Fatalf("GET for a9: %v", r.err)
		}
		var body map[string]any
		if r.status != http.StatusGatewayTimeout || json.Unmarshal(r.body, &body) != nil || !strings.Contains(string(r.body), "a9") {
			t.Errorf("a9 never connected: got %d %s, want 504 with a JSON body naming a9", r.status, r.body)
		}
		if r.took < agentWait-100*time.Millisecond {
			t.Errorf("504 after %v, want after agents.wait (%v)", r.took, agentWait)
		}
		t.Logf("504 for a9 after %v: %s", r.took.Round(time.Millisecond), r.body)
	})
}

// durationOrNever is end-start rounded, or "never" when start is zero.
func durationOrNever(start, end time.Time) string {
	if start.IsZero() {
		return "(never)"
	}
	return end.Sub(start).Round(time.Millisecond).String()
}
