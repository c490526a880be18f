package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// pebbleServer is Let's Encrypt's Pebble ACME server on loopback, with pebble-challtestsrv as its
// DNS server (every name is 127.0.0.1), validating challenges on edge's ports.
type pebbleServer struct {
	Directory string // https://127.0.0.1:PORT/dir
	CAFile    string // verifies Pebble's own HTTPS
	mgmt      string // Pebble's management API
	client    *http.Client
}

// startPebble builds Pebble once (scripts/pebble.sh) and runs it; tlsPort and httpPort are where
// it validates TLS-ALPN-01 and HTTP-01 challenges: edge's public and redirect_http ports.
func startPebble(t *testing.T, tlsPort, httpPort string) *pebbleServer {
	t.Helper()
	root, _ := repoRoot()
	out, err := exec.Command(filepath.Join(root, "scripts", "pebble.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/pebble.sh: %v", err)
	}
	bin := strings.TrimSpace(string(out))
	dir := t.TempDir()
	pki := writeKubePKI(t, dir) // a CA and a serving certificate for 127.0.0.1
	dns := freeAddr(t)
	startProcess(t, "pebble-challtestsrv", exec.Command(filepath.Join(bin, "pebble-challtestsrv"),
		"-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-dnsserver", dns, "-doh", "", "-http01", "", "-https01", "",
		"-tlsalpn01", "", "-management", freeAddr(t)))
	acme, mgmt := freeAddr(t), freeAddr(t)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress": acme, "managementListenAddress": mgmt,
		"certificate": pki.certFile, "privateKey": pki.keyFile,
		"httpPort": atoi(t, httpPort), "tlsPort": atoi(t, tlsPort),
		"ocspResponderURL": "", "externalAccountBindingRequired": false,
	}}
	b, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "pebble.json")
	writeFile(t, cfgFile, b)
	cmd := exec.Command(filepath.Join(bin, "pebble"), "-config", cfgFile, "-dnsserver", dns)
	// No random nonce rejections or validation sleeps: the test is about edge, not retries.
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	startProcess(t, "pebble", cmd)
	p := &pebbleServer{Directory: "https://" + acme + "/dir", CAFile: pki.caFile, mgmt: "https://" + mgmt}
	pem, _ := os.ReadFile(pki.caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	p.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	poll.Until(t, 30*time.Second, "Pebble's directory", func() bool {
		resp, err := p.client.Get(p.Directory)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

// roots is the pool of Pebble's issuing root: certificates it issues verify against it.
func (p *pebbleServer) roots(t *testing.T) *x509.CertPool {
	t.Helper()
	resp, err := p.client.Get(p.mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pem, _ := io.ReadAll(resp.Body)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("Pebble's root: %s", pem)
	}
	return pool
}

func atoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// handshake connects to addr with SNI name and returns the certificate edge served.
func handshake(addr, name string, roots *x509.CertPool) (*x509.Certificate, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// TestACMEWithPebble: certificates from a real ACME server on loopback, for a fixed name at start
// and for a workspace host at its first handshake; a host that is not a workspace gets no
// certificate and no order; a burst of unknown names is rate limited; plain HTTP redirects.
func TestACMEWithPebble(t *testing.T) {
	t.Parallel()
	public, redirect := freeAddr(t), freeAddr(t)
	pb := startPebble(t, portOf(public), portOf(redirect))
	dir := t.TempDir()
	authz := filepath.Join(dir, "workspaces.yaml")
	writeFile(t, authz, []byte("workspaces:\n  - {name: alice, agent_id: a1, users: [alice]}\n"))
	secret := filepath.Join(dir, "secret")
	writeFile(t, secret, []byte(strings.Repeat("s", 40)))
	storage := filepath.Join(dir, "certs")
	cfg := edgeConfig{
		Listen: listenConfig{Public: public},
		Cells:  []cellConfig{{ID: 1, URL: "http://127.0.0.1:9", Legacy: true}},
		Tokens: tokensConfig{JobJWT: jobJWTConfig{Verify: false}},
		TLS: &tlsConfig{RedirectHTTP: redirect, ACME: &acmeConfig{
			Email: "ops@edge.test", CA: pb.Directory, CARoot: pb.CAFile, Domains: []string{"edge.test"},
			OnDemandWorkspaces: true, Storage: storage,
		}},
		Workspaces: &workspacesConfig{
			Domain: "ws.test",
			OIDC: oidcConfig{Issuer: "https://login.edge.test", ClientID: "edge", ClientSecretFile: secret,
				RedirectURL: "https://auth.ws.test/oauth/callback"},
			Authorizer: authorizerConfig{File: authz},
			Session:    sessionConfig{KeyFile: secret},
		},
		Log: logConfig{Level: "info", Format: "text"},
	}
	e := startEdge(t, cfg)
	roots := pb.roots(t)

	t.Run("a fixed name, at start", func(t *testing.T) {
		var cert *x509.Certificate
		poll.Until(t, 60*time.Second, "a certificate for edge.test", func() bool {
			c, err := handshake(public, "edge.test", roots)
			cert = c
			return err == nil
		})
		if cert.Subject.CommonName != "edge.test" && !contains(cert.DNSNames, "edge.test") {
			t.Errorf("certificate for %v, want edge.test", cert.DNSNames)
		}
		// What the alert rules read: the certificate's end of validity, the CA's answers.
		poll.Until(t, 10*time.Second, "the certificate's expiry on /metrics", func() bool {
			n, err := metricSum(e.OpsURL+"/metrics", "edge_tls_certificate_expiry_timestamp_seconds", `name="edge.test",source="tls.acme"`)
			return err == nil && n == float64(cert.NotAfter.Unix())
		})
		if n, err := metricSum(e.OpsURL+"/metrics", "edge_tls_acme_total", `renewal="false",result="obtained"`); err != nil || n < 1 {
			t.Errorf("edge_tls_acme_total{result=obtained}: %v %v, want at least 1", n, err)
		}
		if n, err := metricSum(e.OpsURL+"/metrics", "edge_tls_acme_total", `result="failed"`); err != nil || n != 0 {
			t.Errorf("edge_tls_acme_total{result=failed}: %v %v, want 0", n, err)
		}
	})
	t.Run("a workspace host, on demand", func(t *testing.T) {
		name := "8080-alice.ws.test"
		cert, err := handshake(public, name, roots)
		if err != nil {
			t.Fatalf("first handshake for %s: %v", name, err)
		}
		if !contains(cert.DNSNames, name) {
			t.Errorf("certificate for %v, want %s", cert.DNSNames, name)
		}
	})
	t.Run("no certificate and no order for other names", func(t *testing.T) {
		for _, name := range []string{"other.test", "8080-nobody.ws.test", "x.ws.test", "8080-alice.ws.test.evil.test"} {
			if _, err := handshake(public, name, roots); err == nil {
				t.Errorf("%s: handshake succeeded, want it refused", name)
			}
		}
		filepath.Walk(storage, func(path string, _ os.FileInfo, _ error) error {
			if strings.Contains(path, "nobody") || strings.Contains(path, "other.test") || strings.Contains(path, "evil") {
				t.Errorf("something was stored for a refused name: %s", path)
			}
			return nil
		})
		for _, result := range []string{"not_a_workspace", "unknown_workspace"} {
			if n, err := metricSum(e.OpsURL+"/metrics", "edge_tls_on_demand_total", `result="`+result+`"`); err != nil || n < 1 {
				t.Errorf("edge_tls_on_demand_total{result=%q}: %v %v", result, n, err)
			}
		}
	})
	t.Run("a burst of unknown names is rate limited", func(t *testing.T) {
		for i := range 15 {
			handshake(public, fmt.Sprintf("%d-burst.ws.test", 1000+i), roots)
		}
		if n, err := metricSum(e.OpsURL+"/metrics", "edge_tls_on_demand_total", `result="rate_limited"`); err != nil || n < 1 {
			t.Errorf("rate limited decisions: %v %v, want some", n, err)
		}
	})
	t.Run("plain HTTP redirects to HTTPS", func(t *testing.T) {
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://"+redirect+"/api/v4/jobs/request?x=1", nil)
		req.Host = "edge.test"
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := "https://edge.test:" + portOf(public) + "/api/v4/jobs/request?x=1"; resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
			t.Errorf("redirect: %d to %q, want 308 to %s", resp.StatusCode, resp.Header.Get("Location"), want)
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
