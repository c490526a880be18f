package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type tlsConfig struct {
	Static       *staticTLSConfig `yaml:"static,omitempty"`
	ACME         *acmeConfig      `yaml:"acme,omitempty"`
	RedirectHTTP string           `yaml:"redirect_http,omitempty"`
}

type acmeConfig struct {
	Email              string   `yaml:"email,omitempty"`
	CA                 string   `yaml:"ca"`
	CARoot             string   `yaml:"ca_root,omitempty"`
	Domains            []string `yaml:"domains,omitempty"`
	OnDemandWorkspaces bool     `yaml:"on_demand_workspaces,omitempty"`
	Storage            string   `yaml:"storage,omitempty"`
}

type staticTLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

type aggregationConfig struct {
	Prefix     string          `yaml:"prefix,omitempty"`
	Auth       aggAuthConfig   `yaml:"auth"`
	MemberDown string          `yaml:"member_down,omitempty"`
	Clusters   []clusterConfig `yaml:"clusters"`
	Placement  string          `yaml:"placement,omitempty"`
}

type aggAuthConfig struct {
	TokensFile string `yaml:"tokens_file"`
}

type clusterConfig struct {
	Name      string `yaml:"name"`
	Server    string `yaml:"server"`
	TokenFile string `yaml:"token_file"`
	CAFile    string `yaml:"ca_file"`
}

// aggEnv is edge over TLS aggregating real member clusters under /k8s.
type aggEnv struct {
	t       *testing.T
	members []*kubeMember
	edge    *edgeProc
	cfg     edgeConfig
	dir     string
	caFile  string // verifies edge's certificate
	server  string // https://127.0.0.1:PORT/k8s
	tokens  map[string]string
}

// newAggEnv starts members m1 and m2 and an edge aggregating them; callers are admin (group
// system:masters) and bob (no group).
func newAggEnv(t *testing.T, memberDown string) *aggEnv {
	t.Helper()
	e := &aggEnv{t: t, dir: t.TempDir(), tokens: map[string]string{"admin": randomKubeToken(t), "bob": randomKubeToken(t)}}
	e.members = startKubeMembers(t, []string{"m1", "m2"})
	pki := writeKubePKI(t, e.dir)
	e.caFile = pki.caFile
	tokens := fmt.Sprintf("%s,admin,1,\"system:masters\"\n%s,bob,2\n", e.tokens["admin"], e.tokens["bob"])
	tokensFile := filepath.Join(e.dir, "tokens.csv")
	writeFile(t, tokensFile, []byte(tokens))
	e.cfg = edgeConfig{
		Cells:       []cellConfig{{ID: 1, URL: "http://127.0.0.1:9", Legacy: true}},
		Tokens:      tokensConfig{JobJWT: jobJWTConfig{Verify: false}},
		TLS:         &tlsConfig{Static: &staticTLSConfig{CertFile: pki.certFile, KeyFile: pki.keyFile}},
		Aggregation: &aggregationConfig{Prefix: "/k8s", Auth: aggAuthConfig{TokensFile: tokensFile}, MemberDown: memberDown},
		Log:         logConfig{Level: "info", Format: "text"},
	}
	for _, m := range e.members {
		tf := filepath.Join(e.dir, m.Name+".token")
		writeFile(t, tf, []byte(m.EdgeToken))
		e.cfg.Aggregation.Clusters = append(e.cfg.Aggregation.Clusters, clusterConfig{Name: m.Name, Server: m.Server, TokenFile: tf, CAFile: m.CAFile})
	}
	e.edge = startEdge(t, e.cfg)
	e.server = strings.Replace(e.edge.PublicURL, "http://", "https://", 1) + "/k8s"
	return e
}

// kubectl runs kubectl against edge as user.
func (e *aggEnv) kubectl(t *testing.T, user, stdin string, args ...string) (string, string, error) {
	t.Helper()
	kc := writeKubeconfig(t, e.dir, e.server, e.caFile, e.tokens[user])
	return runKubectl(t, kc, stdin, args...)
}

// client is an HTTPS client that trusts edge's certificate.
func (e *aggEnv) client(t *testing.T) *http.Client {
	pem, err := os.ReadFile(e.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func (e *aggEnv) request(ctx context.Context, t *testing.T, user, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", e.server+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.tokens[user])
	resp, err := e.client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
