package integration

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"gopkg.in/yaml.v3"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/tokens"
)

// httpsClient trusts the CA in caFile; with h2 it speaks HTTP/2 when the server offers it, without
// only HTTP/1.1.
func httpsClient(t *testing.T, caFile string, h2 bool) *http.Client {
	t.Helper()
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: h2, MaxIdleConnsPerHost: 200}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestHTTPSEverything: over TLS with a static certificate, a gitlab-runner-style flow (long poll,
// trace PATCH, 50 MiB upload) over HTTP/2, an agent dialling https:// with a CA file, a WebSocket
// through its tunnel over HTTP/1.1; then one reload that adds a cell, rotates the job-JWT key and
// replaces the certificate while long polls, the WebSocket and an upload are in flight: nothing in
// flight fails, new requests and handshakes see the new config, and a broken file changes nothing.
func TestHTTPSEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pkiA := writeKubePKI(t, t.TempDir())
	agentKey := filepath.Join(dir, "agent.key")
	writeFile(t, agentKey, []byte(strings.Repeat("A", 40)))
	apiKey := filepath.Join(dir, "api.key")
	writeFile(t, apiKey, []byte(strings.Repeat("g", 40)))
	env := newEnv(t, envOptions{longPoll: 6 * time.Second, config: func(c *edgeConfig) {
		c.TLS = &tlsConfig{Static: &staticTLSConfig{CertFile: pkiA.certFile, KeyFile: pkiA.keyFile}}
		c.Agents = &agentsConfig{Keys: []keyConfig{{Alg: "HS256", File: agentKey}}, Wait: "5s"}
		c.GitLabAPI = &secretConfig{SecretFile: apiKey}
	}})
	e := env.edge
	base := strings.Replace(e.PublicURL, "http://", "https://", 1)
	h2 := httpsClient(t, pkiA.caFile, true)
	h1 := httpsClient(t, pkiA.caFile, false)
	r := runner1711()
	token := runnerToken(t, 2)
	cell := env.cell(2)

	t.Run("HTTP/2", func(t *testing.T) {
		resp, err := h2.Get(base + "/api/v4/runners/router/discovery")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("protocol %s, want HTTP/2", resp.Proto)
		}
	})
	t.Run("runner flow over HTTP/2", func(t *testing.T) {
		a := sendTo(t, h2, base, r.requestJob(token, ""))
		value := a.header.Get("X-GitLab-Last-Update")
		if a.status != http.StatusNoContent {
			t.Fatalf("job request: %d", a.status)
		}
		if a = sendTo(t, h2, base, r.requestJob(token, value)); a.status != http.StatusNoContent {
			t.Fatalf("long poll: %d", a.status)
		}
		jobID, err := cell.AddJob()
		if err != nil {
			t.Fatal(err)
		}
		a = sendTo(t, h2, base, r.requestJob(token, value))
		if a.status != http.StatusCreated {
			t.Fatalf("job: %d", a.status)
		}
		job := decodeJob(t, a)
		if job.ID != jobID {
			t.Fatalf("job %d, want %d", job.ID, jobID)
		}
		if a = sendTo(t, h2, base, r.patchTrace(job.ID, job.Token, 0, []byte("hello\n"))); a.status != http.StatusAccepted {
			t.Errorf("trace PATCH: %d", a.status)
		}
		file := &artifactFile{size: 50 << 20, seed: 3}
		if a = sendTo(t, h2, base, r.uploadArtifacts(job.ID, job.Token, file)); a.status != http.StatusCreated {
			t.Fatalf("upload: %d", a.status)
		}
		if j, _ := cell.Job(job.ID); j.Trace == nil {
			t.Errorf("no trace at the cell")
		}
		rec := lastRecord(cell, cellsim.RouteUploadArtifacts)
		if rec.FileSHA256 != file.sum() || rec.FileSize != file.size {
			t.Errorf("artifact at the cell: %d bytes %s, want %d bytes %s", rec.FileSize, rec.FileSHA256, file.size, file.sum())
		}
	})

	// An agent dials https:// with the CA file; a WebSocket reaches its upstream over HTTP/1.1.
	up := startUpstream(t, "a1")
	tok := mintAgentRaw(t, "a1", []byte(strings.Repeat("A", 40)))
	tokFile := filepath.Join(dir, "a1.tok")
	writeFile(t, tokFile, []byte(tok))
	ops := freeAddr(t)
	agent := &agentProc{ID: "a1", OpsURL: "http://" + ops, client: &http.Client{Timeout: time.Second}}
	agent.process = startProcess(t, "agent a1", exec.Command(edgeBinaryPath(), "agent", "--edge", base, "--ca-file", pkiA.caFile,
		"--token-file", tokFile, "--allow-port", fmt.Sprint(up.Port), "--ops", ops))
	poll.Until(t, 15*time.Second, "the agent over https", agent.connected)
	apiToken, _ := tokens.MintGitLabAPIToken([]byte(strings.Repeat("g", 40)), "gitlab", "gitlab-kas", time.Now(), time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wsURL := strings.Replace(base, "https://", "wss://", 1) + fmt.Sprintf("/-/api/v1/agents/a1/proxy/%d/ws", up.Port)
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: h1,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + apiToken}}})
	if err != nil {
		t.Fatalf("WebSocket over https: %v", err)
	}
	defer ws.CloseNow()
	echo := func(msg string) error {
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			return err
		}
		_, b, err := ws.Read(ctx)
		if err == nil && string(b) != msg {
			err = fmt.Errorf("echo %q, want %q", b, msg)
		}
		return err
	}
	if err := echo("before the reload"); err != nil {
		t.Fatalf("WebSocket echo: %v", err)
	}

	// In flight across the reload: long polls held at cell 2 and an upload whose body waits.
	const polls = 20
	value := cell.QueueValue()
	polled := make(chan error, polls)
	for range polls {
		go func() {
			a, err := trySend(ctx, h2, base, r.requestJob(token, value))
			if err == nil && a.status != http.StatusNoContent {
				err = fmt.Errorf("status %d", a.status)
			}
			polled <- err
		}()
	}
	release := make(chan struct{})
	uploaded := make(chan error, 1)
	go func() {
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte(`{"token":"`))
			<-release
			pw.Write([]byte(token + `"}`))
			pw.Close()
		}()
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/v4/runners/verify", pr)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Runner-Token", token)
		resp, err := h2.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		uploaded <- err
	}()
	poll.Until(t, 30*time.Second, "the long polls held at cell 2", func() bool { return cell.Held() == polls })

	// The reload: cell 4 added, job-JWT key k2 instead of k1, a certificate from another CA.
	cell4, err := cellsim.NewServer("", cellsim.Options{CellID: 4, JobIDBase: 6_000_001, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer cell4.Close()
	pkiB := writeKubePKI(t, t.TempDir())
	k2, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKIXPublicKey(&k2.PublicKey)
	k2Pub := filepath.Join(dir, "k2.pub")
	writeFile(t, k2Pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	var cfg map[string]any
	b, _ := os.ReadFile(e.ConfigPath)
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	original := b
	cfg["cells"] = append(cfg["cells"].([]any), map[string]any{"id": 4, "url": cell4.URL})
	cfg["tokens"].(map[string]any)["job_jwt"].(map[string]any)["keys"] = []any{map[string]any{"kid": "k2", "alg": "RS256", "file": k2Pub}}
	cfg["tls"] = map[string]any{"static": map[string]any{"cert_file": pkiB.certFile, "key_file": pkiB.keyFile}}
	reloaded := mustYAML(t, cfg)

	t.Run("a broken file changes nothing", func(t *testing.T) {
		writeFile(t, e.ConfigPath, append(append([]byte{}, original...), []byte("\nbogus: true\n")...))
		e.cmd.Process.Signal(syscall.SIGHUP)
		poll.Until(t, 10*time.Second, "the refusal", func() bool {
			n, err := metricSum(e.OpsURL+"/metrics", "edge_config_reloads_total", `result="error"`)
			return err == nil && n >= 1
		})
		if _, err := handshakeWith(e.PublicURL, pkiA.caFile); err != nil {
			t.Errorf("after a refused reload the old certificate should stay: %v", err)
		}
	})
	writeFile(t, e.ConfigPath, reloaded)
	e.cmd.Process.Signal(syscall.SIGHUP)
	poll.Until(t, 10*time.Second, "the reload", func() bool {
		n, err := metricSum(e.OpsURL+"/metrics", "edge_config_generation", "")
		return err == nil && n == 2
	})

	t.Run("new handshakes see the new certificate", func(t *testing.T) {
		if _, err := handshakeWith(e.PublicURL, pkiB.caFile); err != nil {
			t.Errorf("new CA: %v", err)
		}
		if _, err := handshakeWith(e.PublicURL, pkiA.caFile); err == nil {
			t.Errorf("the old certificate is still served")
		}
	})
	hB := httpsClient(t, pkiB.caFile, true)
	t.Run("new requests see the new cell and key", func(t *testing.T) {
		env.mark()
		a := sendTo(t, hB, base, r.discovery(routableToken(t, "glrt-", 44, tokens.Keys{}.Set(tokens.KeyCell, 4).Set(tokens.KeyOrganization, 1))))
		if n := len(cell4.Records()); n != 1 {
			t.Errorf("a token naming cell 4: status %d, %d requests at cell 4, want 1", a.status, n)
		}
		now := time.Now()
		raw, _ := tokens.MintJobJWT(tokens.MintJobOptions{Key: k2, Algorithm: "RS256", KID: "k2", Issuer: jwtIssuer, Audience: jwtAudience,
			Keys: tokens.Keys{}.Set(tokens.KeyCell, 3), JobID: outsideRanges + 9, IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
		sendTo(t, hB, base, r.downloadArtifacts(outsideRanges+9, "glcbt-"+raw))
		if recs := env.newRecords(); len(recs[3]) != 1 {
			t.Errorf("a job JWT signed with the new key: records %v, want one at cell 3", recordCounts(recs))
		}
	})

	t.Run("nothing in flight failed", func(t *testing.T) {
		if err := echo("after the reload"); err != nil {
			t.Errorf("the WebSocket opened before the reload: %v", err)
		}
		close(release)
		if err := <-uploaded; err != nil {
			t.Errorf("the upload in flight: %v", err)
		}
		var failed []string
		for range polls {
			if err := <-polled; err != nil {
				failed = append(failed, err.Error())
			}
		}
		if len(failed) > 0 {
			t.Errorf("%d of %d long polls failed: %s", len(failed), polls, failed[0])
		}
	})
}

// handshakeWith opens a TLS connection to edge's public address, verifying with caFile.
func handshakeWith(publicURL, caFile string) (*x509.Certificate, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(publicURL, "http://"), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

var recordsMu sync.Mutex

// lastRecord is the last record of a route at the cell.
func lastRecord(cell *cellsim.Server, route string) cellsim.Record {
	recordsMu.Lock()
	defer recordsMu.Unlock()
	var last cellsim.Record
	for _, rec := range cell.Records() {
		if rec.Route == route {
			last = rec
		}
	}
	return last
}

// TestStaticCertificateRotation: the certificate and key files are replaced (as the kubelet does
// with a rotated Secret), the config file is not: new handshakes get the new certificate.
func TestStaticCertificateRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := writeKubePKI(t, t.TempDir()), writeKubePKI(t, t.TempDir())
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	copyFile := func(from, to string) {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, to, data)
	}
	copyFile(a.certFile, cert)
	copyFile(a.keyFile, key)
	e := startEdge(t, edgeConfig{
		Cells:  []cellConfig{{ID: 1, URL: "http://127.0.0.1:9", Legacy: true}},
		Tokens: tokensConfig{JobJWT: jobJWTConfig{Verify: false}},
		TLS:    &tlsConfig{Static: &staticTLSConfig{CertFile: cert, KeyFile: key}},
	})
	if _, err := handshakeWith(e.PublicURL, a.caFile); err != nil {
		t.Fatalf("the first certificate: %v", err)
	}
	// Both files swapped in one step, as a Secret volume's directory swap does.
	next := t.TempDir()
	copyFile(b.certFile, filepath.Join(next, "tls.crt"))
	copyFile(b.keyFile, filepath.Join(next, "tls.key"))
	os.Rename(filepath.Join(next, "tls.key"), key)
	os.Rename(filepath.Join(next, "tls.crt"), cert)
	poll.Until(t, 15*time.Second, "new handshakes to get the new certificate", func() bool {
		_, err := handshakeWith(e.PublicURL, b.caFile)
		return err == nil
	})
}
