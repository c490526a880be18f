package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// kubeMember is one real cluster: etcd and kube-apiserver on loopback, stopped when the test ends.
// No scheduler, controller-manager or kubelet: pods stay Pending.
type kubeMember struct {
	Name       string
	Server     string // https://127.0.0.1:PORT
	CAFile     string // signs the apiserver's serving certificate
	AdminToken string // user "admin" in group system:masters
	EdgeToken  string // user "edge", which may impersonate users, groups and service accounts
	Etcd       string // etcd client URL

	dir       string
	launched  time.Time
	etcd      *process
	apiserver *process

	mu          sync.Mutex
	kubeconfigs map[string]string // token -> kubeconfig file
}

// kubeUser is one extra entry of a member's token file.
type kubeUser struct {
	Name   string
	Token  string
	Groups []string
}

// kubeReadyTimeout bounds a member's start: about 2 s alone, more with other tests on 2 cores.
const kubeReadyTimeout = 2 * time.Minute

// kubeAPIServerBinary runs scripts/kube-apiserver.sh, which builds kube-apiserver the first time
// (minutes) and then only prints the cached binary's path.
func kubeAPIServerBinary(t *testing.T) string {
	t.Helper()
	return scriptTool(t, "kube-apiserver.sh")
}

// scriptTool runs scripts/<script>, which builds a tool from the Go module proxy the first time
// (minutes) into ~/.cache/edge-kube and prints its path, the last line of its output.
func scriptTool(t *testing.T, script string) string {
	t.Helper()
	root, _ := repoRoot() // TestMain has checked it
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "scripts", script))
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/%s: %v\n%s", script, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := lines[len(lines)-1]
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("scripts/%s printed %q: %v", script, bin, err)
	}
	return bin
}

// startKubeMember starts one member and returns once its /readyz answers 200 and the edge user
// may impersonate. users are added to the token file next to admin and edge.
func startKubeMember(t *testing.T, name string, users ...kubeUser) *kubeMember {
	t.Helper()
	return startKubeMembers(t, []string{name}, users...)[0]
}

// startKubeMembers starts the members side by side (their apiservers start in parallel) and
// returns them, ready, in the order of names. Every member knows every one of users.
func startKubeMembers(t *testing.T, names []string, users ...kubeUser) []*kubeMember {
	t.Helper()
	bin := kubeAPIServerBinary(t)
	etcdBin := lookBinary(t, "etcd", "etcd-server")
	ms := make([]*kubeMember, len(names))
	for i, name := range names {
		ms[i] = launchKubeMember(t, bin, etcdBin, name, users)
	}
	for _, m := range ms {
		m.waitReady(t)
		m.apply(t, edgeImpersonatorRBAC)
	}
	return ms
}

// lookBinary finds a Debian-packaged binary on PATH or in /usr/bin.
func lookBinary(t *testing.T, name, pkg string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		bin, err = exec.LookPath("/usr/bin/" + name)
	}
	if err != nil {
		t.Fatalf("%s not found (PATH or /usr/bin): install the Debian package %s (`make deps` does): %v", name, pkg, err)
	}
	return bin
}

// launchKubeMember starts etcd, waits for it, and starts kube-apiserver without waiting.
func launchKubeMember(t *testing.T, bin, etcdBin, name string, users []kubeUser) *kubeMember {
	t.Helper()
	m := &kubeMember{
		Name: name, dir: t.TempDir(), kubeconfigs: map[string]string{}, launched: time.Now(),
		AdminToken: randomKubeToken(t), EdgeToken: randomKubeToken(t),
	}
	pki := writeKubePKI(t, m.dir)
	m.CAFile = pki.caFile
	all := append([]kubeUser{
		{Name: "admin", Token: m.AdminToken, Groups: []string{"system:masters"}},
		{Name: "edge", Token: m.EdgeToken},
	}, users...)
	tokenFile := writeTokenFile(t, m.dir, all)

	m.startEtcd(t, etcdBin)
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	m.Server = "https://" + addr
	args := []string{
		"--etcd-servers=" + m.Etcd,
		"--secure-port=" + port, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--tls-cert-file=" + pki.certFile, "--tls-private-key-file=" + pki.keyFile,
		"--cert-dir=" + filepath.Join(m.dir, "certs"),
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		// No controller-manager creates service account tokens.
		"--disable-admission-plugins=ServiceAccount",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + pki.saKeyFile,
		"--service-account-signing-key-file=" + pki.saKeyFile,
		"--api-audiences=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false",
		// Watches and lists go to etcd, so that compact makes older resourceVersions 410 (the
		// watch cache would go on serving them from memory).
		"--watch-cache=false",
		"--profiling=false",
	}
	m.apiserver = startProcess(t, "kube-apiserver "+name, exec.Command(bin, args...))
	return m
}

// startEtcd runs a one-node etcd on two free loopback ports and waits for /health.
func (m *kubeMember) startEtcd(t *testing.T, bin string) {
	t.Helper()
	client, peer := "http://"+freeAddr(t), "http://"+freeAddr(t)
	m.Etcd = client
	cmd := exec.Command(bin,
		"--name=default", "--data-dir="+filepath.Join(m.dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=default="+peer,
		"--logger=zap", "--log-level=warn",
	)
	m.etcd = startProcess(t, "etcd "+m.Name, cmd)
	hc := &http.Client{Timeout: time.Second}
	m.poll(t, m.etcd, 30*time.Second, client+"/health", func() (bool, string) {
		res, err := hc.Get(client + "/health")
		if err != nil {
			return false, err.Error()
		}
		defer res.Body.Close()
		return res.StatusCode == http.StatusOK, res.Status
	})
}

// waitReady polls the apiserver's /readyz as admin until it answers 200.
func (m *kubeMember) waitReady(t *testing.T) {
	t.Helper()
	hc := m.httpClient(t)
	m.poll(t, m.apiserver, kubeReadyTimeout, m.Server+"/readyz", func() (bool, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, m.Server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+m.AdminToken)
		res, err := hc.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer res.Body.Close()
		return res.StatusCode == http.StatusOK, res.Status
	})
	t.Logf("kube member %s ready at %s, %v after its start (keys, etcd, apiserver)", m.Name, m.Server, time.Since(m.launched).Round(time.Millisecond))
}

// poll calls ready until it is true, p exits or timeout passes.
func (m *kubeMember) poll(t *testing.T, p *process, timeout time.Duration, what string, ready func() (bool, string)) {
	t.Helper()
	poll.UntilState(t, timeout, what, func() (bool, string) {
		ok, last := ready()
		if !ok {
			select {
			case <-p.exited:
				t.Fatalf("%s exited before %s answered: %v", p.name, what, p.waitErr)
			default:
			}
		}
		return ok, last
	})
}

// httpClient trusts the member's CA (and nothing else); callers set the bearer token.
func (m *kubeMember) httpClient(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(m.CAFile)
	if err != nil {
		t.Fatalf("read CA: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
}

// get sends a GET with token to the member and returns the status code and body.
func (m *kubeMember) get(t *testing.T, token, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.Server+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	hc := m.httpClient(t)
	defer hc.CloseIdleConnections()
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s on %s: %v", path, m.Name, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s on %s: %v", path, m.Name, err)
	}
	return res.StatusCode, string(body)
}

// stop stops the apiserver, then etcd (a member that is down).
func (m *kubeMember) stop() {
	m.apiserver.stop(10 * time.Second)
	m.etcd.stop(10 * time.Second)
}

// edgeImpersonatorRBAC lets user edge impersonate anyone, and grants it nothing else: what edge
// may do on a member is what the user it acts for may do.
const edgeImpersonatorRBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: edge-impersonator
rules:
- apiGroups: [""]
  resources: [users, groups, serviceaccounts]
  verbs: [impersonate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: edge-impersonator
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: edge-impersonator
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: edge
`
