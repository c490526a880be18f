package tunnel

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestAgentLoopPanicStartsAgain: a panic in the agent's keep loop (here its token source, which
// each connect calls) is contained as tunnel_agent, and the loop starts again and connects.
func TestAgentLoopPanicStartsAgain(t *testing.T) {
	g := newTestGuard(t)
	var crash atomic.Bool
	e := newEnv(t, envOptions{agent: func(o *AgentOptions) {
		o.Guard = g
		o.Token = func(context.Context) (string, error) {
			if crash.CompareAndSwap(true, false) {
				panic("test: the token source crashed")
			}
			return "good-" + testAgent, nil
		}
	}})
	first := e.waitConnected(1)[0]
	crash.Store(true) // the next connect crashes, once
	first.Close()
	recv(t, first.Done(), "the first connection forgotten")
	waitPanics(t, g, "tunnel_agent", 1)
	if now := e.waitConnected(1); now[0] == first {
		t.Error("the agent is still on its first connection")
	}
	if status, body := get(t, e.url("/hello"), nil); status != http.StatusOK || body != "hello from upstream" {
		t.Errorf("after the crash: got %d %q, want 200 from the upstream", status, body)
	}
}

// TestControlHandlerPanicClosesTheConnection: a panic in what the edge does on a control message
// (here OnDisconnect, called when the agent asks to drain a connection it replaces) is contained
// as tunnel_control and closes that connection at once, instead of leaving it open until the
// agent's drain timeout; the agent's other connection serves.
func TestControlHandlerPanicClosesTheConnection(t *testing.T) {
	g := newTestGuard(t)
	var crash atomic.Bool
	crash.Store(true)
	crashed := make(chan *Conn, 1)
	e := newEnv(t, envOptions{
		server: func(o *ServerOptions) {
			o.Guard = g
			o.OnDisconnect = func(c *Conn) {
				if crash.CompareAndSwap(true, false) {
					crashed <- c
					panic("test: OnDisconnect crashed")
				}
			}
		},
		agent: func(o *AgentOptions) {
			// The agent replaces its connection after about this long: it connects a new one, then
			// sends the old one's drain message. The drain timeout outlasts the test.
			o.MaxConnectionAge, o.DrainTimeout = 500*time.Millisecond, time.Minute
		},
	})
	first := e.waitConnected(1)[0]
	c := recv(t, crashed, "the drain message handled")
	if c != first {
		t.Errorf("OnDisconnect crashed for connection %s, want the first, %s", c.ID(), first.ID())
	}
	recv(t, first.Done(), "the crashed connection closed")
	waitPanics(t, g, "tunnel_control", 1)
	poll.Until(t, 5*time.Second, "the agent on another connection", func() bool {
		now := e.server.Lookup(testAgent)
		return len(now) >= 1 && now[0] != first
	})
	if status, body := get(t, e.url("/hello"), nil); status != http.StatusOK || body != "hello from upstream" {
		t.Errorf("after the crash: got %d %q, want 200 from the upstream", status, body)
	}
}
