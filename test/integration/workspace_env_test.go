package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/oidctest"
	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

type workspacesConfig struct {
	Domain       string           `yaml:"domain"`
	InsecureHTTP bool             `yaml:"insecure_http"`
	OIDC         oidcConfig       `yaml:"oidc"`
	Authorizer   authorizerConfig `yaml:"authorizer"`
	Session      sessionConfig    `yaml:"session"`
	SSH          *wsSSHConfig     `yaml:"ssh,omitempty"`
}

type oidcConfig struct {
	Issuer           string   `yaml:"issuer"`
	ClientID         string   `yaml:"client_id"`
	ClientSecretFile string   `yaml:"client_secret_file"`
	RedirectURL      string   `yaml:"redirect_url"`
	Scopes           []string `yaml:"scopes,omitempty"`
}

type authorizerConfig struct {
	File string `yaml:"file,omitempty"`
}

type sessionConfig struct {
	KeyFile string `yaml:"key_file"`
	Recheck string `yaml:"recheck,omitempty"`
}

const wsDomain = "ws.localhost"

// wsEnv is edges serving workspaces on *.ws.localhost with a real OpenID provider, a static
// authorizer file, and an agent serving alice's workspace (and bob's).
type wsEnv struct {
	t       *testing.T
	c       *tunnelCluster
	op      *oidctest.Provider
	authz   string // the static authorizer file
	up      *upstream
	edges   []*edgeProc
	ports   []string // each edge's public port
	wsPort  int      // the workspace port in the host names: the upstream's
	recheck time.Duration
	agent   *agentProc
}

// newWSEnv starts n edges (sharing Redis when n > 1) serving workspaces, and an agent for
// workspace alice (and bob) connected to the edge at holder.
func newWSEnv(t *testing.T, n, holder int, recheck time.Duration) *wsEnv {
	t.Helper()
	e := &wsEnv{t: t, recheck: recheck}
	// Every edge's public port is chosen first: the provider must know each redirect URI.
	for range n {
		e.ports = append(e.ports, portOf(freeAddr(t)))
	}
	var redirects []string
	for _, p := range e.ports {
		redirects = append(redirects, "http://auth."+wsDomain+":"+p+"/oauth/callback")
	}
	e.op = oidctest.Start(t, oidctest.Options{RedirectURIs: redirects, Users: []oidctest.User{
		{Username: "alice", Password: "pw-alice"}, {Username: "bob", Password: "pw-bob"},
	}})
	e.c = newTunnelCluster(t, 0)
	e.authz = filepath.Join(e.c.dir, "workspaces.yaml")
	e.setAccess(map[string][]string{"alice": {"alice"}, "bob": {"bob"}})
	secret := filepath.Join(e.c.dir, "oidc.secret")
	writeFile(t, secret, []byte(e.op.ClientSecret))
	sessionKey := filepath.Join(e.c.dir, "session.key")
	writeFile(t, sessionKey, []byte(strings.Repeat("s", 40)))
	for i, p := range e.ports {
		cfg := e.c.newEdgeConfig()
		if n == 1 {
			cfg.Registry, cfg.Internal, cfg.Listen.Internal = nil, nil, ""
		}
		cfg.Listen.Public = "127.0.0.1:" + p
		cfg.Log = logConfig{Level: "info", Format: "text"}
		cfg.Workspaces = &workspacesConfig{
			Domain: wsDomain, InsecureHTTP: true,
			OIDC: oidcConfig{Issuer: e.op.Issuer, ClientID: e.op.ClientID, ClientSecretFile: secret,
				RedirectURL: redirects[i], Scopes: []string{"openid", "profile"}},
			Authorizer: authorizerConfig{File: e.authz},
			Session:    sessionConfig{KeyFile: sessionKey, Recheck: recheck.String()},
		}
		e.edges = append(e.edges, startEdge(t, cfg))
		e.c.edges = append(e.c.edges, e.edges[i])
	}
	e.up = startUpstream(t, "a1")
	e.wsPort = e.up.Port
	e.agent = e.c.startAgent("a1", e.edges[holder].PublicURL, e.up)
	if n > 1 {
		e.c.waitHeld(t, "a1", e.edges[holder], 15*time.Second)
	} else {
		poll.Until(t, 15*time.Second, "the agent to connect", e.agent.connected)
	}
	return e
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// setAccess writes the static authorizer file: workspace -> users, all served by agent a1.
func (e *wsEnv) setAccess(access map[string][]string) {
	e.t.Helper()
	var b strings.Builder
	b.WriteString("workspaces:\n")
	for ws, users := range access {
		b.WriteString("  - {name: " + ws + ", agent_id: a1, users: [" + strings.Join(users, ", ") + "]}\n")
	}
	tmp := e.authz + ".new"
	writeFile(e.t, tmp, []byte(b.String()))
	if err := os.Rename(tmp, e.authz); err != nil {
		e.t.Fatal(err)
	}
}

// wsURL is a URL of workspace ws on edge i.
func (e *wsEnv) wsURL(i int, ws, path string) string {
	return "http://" + strconv.Itoa(e.wsPort) + "-" + ws + "." + wsDomain + ":" + e.ports[i] + path
}

// loginGo logs user in with a Go client (a cookie jar, *.localhost on loopback), starting at
// workspace ws on edge i, and returns the client once it holds the workspace's session.
func (e *wsEnv) loginGo(i int, ws, user string) *http.Client {
	e.t.Helper()
	c, _ := e.followLogin(i, ws, user, false)
	return c
}

// transferLink logs user in with a Go client up to the transfer link, and returns the link
// without following it: what an attacker would send a victim.
func (e *wsEnv) transferLink(i int, ws, user string) string {
	e.t.Helper()
	_, link := e.followLogin(i, ws, user, true)
	return link
}

// followLogin follows a login's redirects from workspace ws on edge i, logging in at the
// provider as user, until an answer that is not a redirect or, with toTransfer, the transfer link.
func (e *wsEnv) followLogin(i int, ws, user string, toTransfer bool) (*http.Client, string) {
	e.t.Helper()
	c := testnet.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	next := e.wsURL(i, ws, "/headers")
	for range 10 {
		if toTransfer && strings.Contains(next, "edge_transfer=") {
			return c, next
		}
		resp, err := c.Get(next)
		if err != nil {
			e.t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		switch {
		case resp.StatusCode != http.StatusFound && !toTransfer:
			return c, ""
		case resp.StatusCode != http.StatusFound:
			e.t.Fatalf("no transfer link for %s at %s: status %d", user, ws, resp.StatusCode)
		case strings.HasPrefix(loc, e.op.Issuer):
			back, err := e.op.Login(context.Background(), c, loc, user, "pw-"+user)
			if err != nil {
				e.t.Fatalf("provider login: %v", err)
			}
			next = back.String()
		default:
			u, err := resp.Request.URL.Parse(loc)
			if err != nil {
				e.t.Fatal(err)
			}
			next = u.String()
		}
	}
	e.t.Fatalf("login for %s at %s did not end", user, ws)
	return nil, ""
}
