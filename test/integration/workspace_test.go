package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

// TestWorkspaceLoginThroughTunnel: a Go browser logs in at a real OpenID provider and reaches
// alice's workspace through the agent's tunnel, edge's cookies stay with edge, edge's own paths
// belong to the app there, bob is refused, explain names the workspace, and editing the static
// authorizer file revokes access within the recheck interval.
func TestWorkspaceLoginThroughTunnel(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t, 1, 0, 500*time.Millisecond)
	alice := e.loginGo(0, "alice", "alice")
	resp, body := fetch(t, alice, e.wsURL(0, "alice", "/headers"))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Upstream") != "a1" {
		t.Fatalf("alice's workspace: status %d from %q: %s", resp.StatusCode, resp.Header.Get("X-Upstream"), body)
	}
	var seen headersAnswer
	if err := json.Unmarshal(body, &seen); err != nil {
		t.Fatal(err)
	}
	if ck := seen.Header.Get("Cookie"); strings.Contains(ck, "edge_") {
		t.Errorf("edge's cookies reached the workspace: %q", ck)
	}
	if want := strconv.Itoa(e.wsPort) + "-alice." + wsDomain + ":" + e.ports[0]; seen.Host != want {
		t.Errorf("Host at the workspace: %q, want %q", seen.Host, want)
	}
	t.Run("edge's own paths belong to the app", func(t *testing.T) {
		for _, path := range []string{"/metrics", "/healthz", "/readyz", "/oauth/callback", "/-/api/v1/agents/a1/connections"} {
			resp, body := fetch(t, alice, e.wsURL(0, "alice", path))
			// The app has none of these paths: its own 404, never edge's metrics or health.
			if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Upstream") != "a1" || strings.Contains(string(body), "edge_") {
				t.Errorf("%s on a workspace host: status %d, want the app's 404: %.80s", path, resp.StatusCode, body)
			}
		}
	})
	t.Run("malformed and unknown hosts", func(t *testing.T) {
		for _, host := range []string{"0" + strconv.Itoa(e.wsPort) + "-alice", strconv.Itoa(e.wsPort) + "-carol", "x.y"} {
			resp, _ := fetch(t, testnet.Client(), "http://"+host+"."+wsDomain+":"+e.ports[0]+"/")
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s: status %d, want 404 before any login", host, resp.StatusCode)
			}
		}
	})
	t.Run("another user", func(t *testing.T) {
		bob := e.loginGo(0, "alice", "bob")
		if resp, _ := fetch(t, bob, e.wsURL(0, "alice", "/headers")); resp.StatusCode != http.StatusForbidden {
			t.Errorf("bob on alice's workspace: status %d, want 403", resp.StatusCode)
		}
	})
	t.Run("explain", func(t *testing.T) {
		stdout, stderr, code := runEdge(t, "explain", "--config", e.edges[0].ConfigPath, e.wsURL(0, "alice", "/x"))
		if code != 0 {
			t.Fatalf("explain: %d %s", code, stderr)
		}
		var out map[string]any
		json.Unmarshal([]byte(stdout), &out)
		if out["route"] != "workspace" || out["workspace"] != "alice" || out["port"] != strconv.Itoa(e.wsPort) || out["agent_id"] != "a1" {
			t.Errorf("explain: %s", stdout)
		}
		stdout, _, _ = runEdge(t, "explain", "--config", e.edges[0].ConfigPath, "http://1-carol."+wsDomain+"/")
		json.Unmarshal([]byte(stdout), &out)
		if out["status"] != float64(404) {
			t.Errorf("explain of an unknown workspace: %s", stdout)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		for _, m := range []struct{ name, match string }{
			{"edge_workspace_logins_total", `outcome="ok"`},
			{"edge_workspace_authorizations_total", `decision="allowed"`},
			{"edge_workspace_authorizations_total", `decision="denied"`},
			{"edge_workspace_authz_cache_total", `result="hit"`},
		} {
			if n, err := metricSum(e.edges[0].OpsURL+"/metrics", m.name, m.match); err != nil || n < 1 {
				t.Errorf("%s{%s}: %v %v, want at least 1", m.name, m.match, n, err)
			}
		}
	})
	t.Run("revoked by editing the authorizer file", func(t *testing.T) {
		e.setAccess(map[string][]string{"alice": {"carol"}, "bob": {"bob"}})
		poll.Until(t, 10*time.Second, "alice's access to end", func() bool {
			resp, _ := fetch(t, alice, e.wsURL(0, "alice", "/headers"))
			return resp.StatusCode == http.StatusForbidden
		})
	})
}

// TestWorkspaceAgentOnAnotherEdge: the agent is held by edge 1, the browser enters edge 0; a
// transfer token spent at one instance is spent at every instance (shared Redis).
func TestWorkspaceAgentOnAnotherEdge(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t, 2, 1, 30*time.Second)
	alice := e.loginGo(0, "alice", "alice")
	resp, body := fetch(t, alice, e.wsURL(0, "alice", "/headers"))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Upstream") != "a1" {
		t.Fatalf("through edge 0 to the agent on edge 1: status %d: %s", resp.StatusCode, body)
	}
	// A transfer token, made by edge 0's callback, replayed at edge 1 after edge 0 spent it.
	c := testnet.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var transfer string
	next := e.wsURL(0, "alice", "/")
	for transfer == "" {
		resp, _ := fetch(t, c, next)
		loc := resp.Header.Get("Location")
		switch {
		case resp.StatusCode != http.StatusFound:
			t.Fatalf("login stopped at %d", resp.StatusCode)
		case strings.HasPrefix(loc, e.op.Issuer):
			back, err := e.op.Login(t.Context(), c, loc, "alice", "pw-alice")
			if err != nil {
				t.Fatal(err)
			}
			next = back.String()
		case strings.Contains(loc, "edge_transfer="):
			transfer = loc
		default:
			u, _ := resp.Request.URL.Parse(loc)
			next = u.String()
		}
	}
	if resp, _ := fetch(t, c, transfer); resp.StatusCode != http.StatusFound {
		t.Fatalf("spending the transfer token: %d", resp.StatusCode)
	}
	elsewhere := strings.Replace(transfer, ":"+e.ports[0]+"/", ":"+e.ports[1]+"/", 1)
	if resp, _ := fetch(t, testnet.Client(), elsewhere); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a spent transfer token at another instance: status %d, want 400", resp.StatusCode)
	}
}

func fetch(t *testing.T, c *http.Client, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}
