package integration

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/tokens"
)

// TestTunnelAgentAuth: the agent id comes from the agent token only; expired, unsigned and
// wrong-audience agent tokens are refused; the internal listener refuses missing, expired and
// wrong-audience internal JWTs and a second hop, and says "not here" for an agent it does not
// hold.
func TestTunnelAgentAuth(t *testing.T) {
	t.Parallel()
	c := newTunnelCluster(t, 2)
	e := c.edges[0]
	up := startUpstream(t, "a1")
	c.startAgent("a1", e.PublicURL, up)
	c.waitHeld(t, "a1", e, 15*time.Second)

	t.Run("agent id from the token only", func(t *testing.T) {
		tok := c.mintAgentToken(t, tokens.MintAgentOptions{AgentID: "a1"})
		spoof := http.Header{
			"Edge-Agent-Id":   {"a2"},
			"Edge-Agent-Info": {`{"version":"v1","pod_name":"a2"}`},
		}
		status, connID, conn := dialConnect(t, e, "?agent_id=a2", tok, spoof)
		if status != http.StatusSwitchingProtocols {
			t.Fatalf("connect with a1's token: got %d, want 101", status)
		}
		defer conn.Close()
		// The tunnel handshake: the yamux session and the control stream, as `edge agent` opens
		// them; without it the connection is never listed.
		session, err := yamux.Client(conn, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer session.Close()
		if _, err := session.OpenStream(); err != nil {
			t.Fatalf("open the control stream: %v", err)
		}
		poll.Until(t, 10*time.Second, "the second connection of a1 to be listed", func() bool {
			conns, err := c.connections(c.edges[1], "a1")
			if err != nil {
				return false
			}
			for _, ci := range conns {
				if ci.ConnectionID == connID && ci.AgentID == "a1" {
					return true
				}
			}
			return false
		})
		for _, edge := range c.edges {
			if conns, err := c.connections(edge, "a2"); err != nil || len(conns) != 0 {
				t.Errorf("%s lists a2: %+v %v, want no connection", c.edgeName(edge), conns, err)
			}
		}
	})

	t.Run("bad agent tokens", func(t *testing.T) {
		now := time.Now()
		bad := []struct {
			name  string
			id    string
			token string
		}{
			{"expired", "bad-exp", c.mintAgentToken(t, tokens.MintAgentOptions{AgentID: "bad-exp", IssuedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)})},
			{"alg none", "bad-none", unsignedAgentToken("bad-none", now)},
			{"wrong audience", "bad-aud", c.mintAgentToken(t, tokens.MintAgentOptions{AgentID: "bad-aud", Audience: "gitlab-kas"})},
			{"internal audience", "bad-int", c.mintAgentToken(t, tokens.MintAgentOptions{AgentID: "bad-int", Audience: tokens.InternalAudience})},
			{"other key", "bad-key", c.mintAgentToken(t, tokens.MintAgentOptions{AgentID: "bad-key", Key: []byte(strings.Repeat("k", 40))})},
			{"no exp", "bad-noexp", c.mintAgentToken(t, tokens.MintAgentOptions{AgentID: "bad-noexp", ExpiresAt: time.Unix(0, 0)})},
		}
		var agents []*agentProc
		for _, b := range bad {
			c.noteToken(b.token)
			if status, _, conn := dialConnect(t, e, "", b.token, nil); status != http.StatusUnauthorized {
				conn.Close()
				t.Errorf("%s: connect: got %d, want 401", b.name, status)
			}
			agents = append(agents, c.startAgentWithToken(b.id, e.PublicURL, c.tokenFile(b.id, b.token), up))
		}
		for i, b := range bad {
			a := agents[i]
			poll.Until(t, 10*time.Second, b.name+": the agent to report a refused connect", func() bool {
				v, _ := metricSum(a.OpsURL+"/metrics", "edge_agent_connects_total", `result="unauthorized"`)
				return v >= 1
			})
			if out := a.out.String(); !strings.Contains(out, "401") {
				t.Errorf("%s: the agent's log does not mention the 401:\n%s", b.name, out)
			}
			if a.connected() {
				t.Errorf("%s: the agent says it is connected", b.name)
			}
			for _, edge := range c.edges {
				if conns, err := c.connections(edge, b.id); err != nil || len(conns) != 0 {
					t.Errorf("%s: %s lists %s: %+v %v, want no connection", b.name, c.edgeName(edge), b.id, conns, err)
				}
			}
		}
	})

	t.Run("internal listener", func(t *testing.T) {
		now := time.Now()
		valid := c.internalToken(t, "a1", now)
		tests := []struct {
			name   string
			agent  string
			token  string
			hop    string
			status int
		}{
			{"valid", "a1", valid, "1", http.StatusOK},
			{"no token", "a1", "", "1", http.StatusUnauthorized},
			{"expired", "a1", c.internalToken(t, "a1", now.Add(-time.Minute)), "1", http.StatusUnauthorized},
			{"wrong audience", "a1", c.mintInternalLike(t, tokens.MintAgentOptions{Audience: tokens.DefaultAgentAudience}), "1", http.StatusUnauthorized},
			{"bound to another agent", "a1", c.internalToken(t, "a2", now), "1", http.StatusUnauthorized},
			{"other secret", "a1", c.mintInternalLike(t, tokens.MintAgentOptions{Key: []byte(strings.Repeat("s", 40))}), "1", http.StatusUnauthorized},
			{"API JWT", "a1", c.apiToken, "1", http.StatusUnauthorized},
			{"second hop", "a1", valid, "2", http.StatusLoopDetected},
			{"agent not here", "a9", c.internalToken(t, "a9", now), "1", http.StatusMisdirectedRequest},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodGet, e.InternalURL+"/headers", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Edge-Agent-Id", tt.agent)
				req.Header.Set("Edge-Port", strconv.Itoa(up.Port))
				req.Header.Set("Edge-Hop", tt.hop)
				req.Header.Set("Edge-Whatever", "x")
				if tt.token != "" {
					req.Header.Set("Authorization", "Bearer "+tt.token)
				}
				res, err := c.client.Do(req)
				if err != nil {
					t.Fatalf("GET: %v", err)
				}
				defer res.Body.Close()
				body, _ := io.ReadAll(res.Body)
				if res.StatusCode != tt.status {
					t.Fatalf("got %d %s, want %d", res.StatusCode, body, tt.status)
				}
				switch res.StatusCode {
				case http.StatusMisdirectedRequest:
					if res.Header.Get("Edge-Not-Here") != "1" {
						t.Errorf("421 without Edge-Not-Here: 1 (got %q)", res.Header.Get("Edge-Not-Here"))
					}
				case http.StatusOK:
					var got headersAnswer
					if err := json.Unmarshal(body, &got); err != nil || got.Agent != "a1" {
						t.Fatalf("answer: %v %s", err, body)
					}
					for k := range got.Header {
						if strings.HasPrefix(k, "Edge-") || k == "Authorization" {
							t.Errorf("the upstream got header %s", k)
						}
					}
				}
			})
		}
	})
}

// mintAgentToken signs an agent token with the cluster's agent key, aud edge-agent and an hour
// of life, unless o says otherwise (ExpiresAt at the epoch: no exp claim).
func (c *tunnelCluster) mintAgentToken(t *testing.T, o tokens.MintAgentOptions) string {
	t.Helper()
	now := time.Now()
	if o.Key == nil {
		o.Key = c.agentSecret
	}
	if o.Algorithm == "" {
		o.Algorithm = "HS256"
	}
	if o.Audience == "" {
		o.Audience = tokens.DefaultAgentAudience
	}
	if o.IssuedAt.IsZero() {
		o.IssuedAt = now
	}
	switch {
	case o.ExpiresAt.IsZero():
		o.ExpiresAt = now.Add(time.Hour)
	case o.ExpiresAt.Unix() == 0:
		o.ExpiresAt = time.Time{}
	}
	tok, err := tokens.MintAgentToken(o)
	if err != nil {
		t.Fatalf("MintAgentToken: %v", err)
	}
	return c.noteToken(tok)
}

// internalToken is an internal JWT for agentID as an edge mints it at now.
func (c *tunnelCluster) internalToken(t *testing.T, agentID string, now time.Time) string {
	t.Helper()
	s, err := tokens.NewInternalSigner(c.internalSecret, 0)
	if err != nil {
		t.Fatalf("NewInternalSigner: %v", err)
	}
	tok, err := s.Mint(agentID, now)
	if err != nil {
		t.Fatalf("Mint: %v", err)
	}
	return c.noteToken(tok)
}

// mintInternalLike is an internal JWT for a1 (iss edge, aud edge-internal, 5 s, the internal
// secret) but for what o overrides.
func (c *tunnelCluster) mintInternalLike(t *testing.T, o tokens.MintAgentOptions) string {
	t.Helper()
	now := time.Now()
	if o.Key == nil {
		o.Key = c.internalSecret
	}
	if o.Audience == "" {
		o.Audience = tokens.InternalAudience
	}
	o.Algorithm, o.Issuer, o.AgentID = "HS256", tokens.InternalIssuer, "a1"
	o.IssuedAt, o.ExpiresAt = now, now.Add(5*time.Second)
	tok, err := tokens.MintAgentToken(o)
	if err != nil {
		t.Fatalf("MintAgentToken: %v", err)
	}
	return c.noteToken(tok)
}

// unsignedAgentToken is an "alg":"none" agent token with valid claims and an empty signature.
func unsignedAgentToken(agentID string, now time.Time) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." +
		enc(map[string]any{"aud": tokens.DefaultAgentAudience, "agent_id": agentID, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}) + "."
}

// dialConnect sends an agent's connect request (query appended to the path) with token and
// extra headers, as `edge agent` does, and returns the status, the connection id of a 101 and
// the connection (kept open after a 101, so the tunnel stays registered; closed otherwise).
func dialConnect(t *testing.T, e *edgeProc, query, token string, extra http.Header) (int, string, net.Conn) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(e.PublicURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	var req strings.Builder
	fmt.Fprintf(&req, "GET /-/agent/connect%s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: edge-tunnel\r\n", query, strings.TrimPrefix(e.PublicURL, "http://"))
	if token != "" {
		fmt.Fprintf(&req, "Authorization: Bearer %s\r\n", token)
	}
	for k, vs := range extra {
		for _, v := range vs {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
	}
	req.WriteString("\r\n")
	if _, err := io.WriteString(conn, req.String()); err != nil {
		conn.Close()
		t.Fatalf("write connect request: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		t.Fatalf("read connect answer: %v", err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
		conn.Close()
		return res.StatusCode, "", conn
	}
	conn.SetDeadline(time.Time{})
	return res.StatusCode, res.Header.Get("Edge-Connection-Id"), conn
}
