package integration

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/tokens"
)

// TestReloadWithTrafficInFlight: one reload changes a cell's URL, rotates the job-JWT key and
// replaces the agent key while long polls and a request through an agent's tunnel are in flight.
// Nothing in flight fails; new requests, new job JWTs and new agent connections see the new
// config at once.
func TestReloadWithTrafficInFlight(t *testing.T) {
	t.Parallel()
	const polls = 50
	dir := t.TempDir()
	secretA, secretB := []byte(strings.Repeat("A", 40)), []byte(strings.Repeat("B", 40))
	apiSecret := []byte(strings.Repeat("g", 40))
	agentKey := filepath.Join(dir, "agent.key")
	apiKey := filepath.Join(dir, "api.key")
	writeFile(t, agentKey, secretA)
	writeFile(t, apiKey, apiSecret)
	env := newEnv(t, envOptions{longPoll: 8 * time.Second, config: func(c *edgeConfig) {
		c.Agents = &agentsConfig{Keys: []keyConfig{{Alg: "HS256", File: agentKey}}, Wait: "5s"}
		c.GitLabAPI = &secretConfig{SecretFile: apiKey}
	}})
	e := env.edge
	up := startUpstream(t, "a1")
	mintAgent := func(id string, key []byte) string {
		path := filepath.Join(dir, id+".tok")
		writeFile(t, path, []byte(mintAgentRaw(t, id, key)))
		return path
	}
	a1 := startAgentProc(t, "a1", e.PublicURL, mintAgent("a1", secretA), up.Port)
	poll.Until(t, 15*time.Second, "agent a1 to connect", a1.connected)
	apiToken, err := tokens.MintGitLabAPIToken(apiSecret, "gitlab", "gitlab-kas", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	// In flight: long polls held at cell 2, and a request held by the agent's upstream.
	cell := env.cell(2)
	value := cell.QueueValue()
	jobPoll := runner1711().requestJob(runnerToken(t, 2), value)
	client := newClient(polls + 10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	polled := make(chan error, polls)
	for range polls {
		go func() {
			a, err := trySend(ctx, client, e.PublicURL, jobPoll)
			if err == nil && (a.status != http.StatusNoContent || a.header.Get("X-GitLab-Last-Update") != value) {
				err = fmt.Errorf("status %d, X-GitLab-Last-Update %q", a.status, a.header.Get("X-GitLab-Last-Update"))
			}
			polled <- err
		}()
	}
	tunneled := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/-/api/v1/agents/a1/proxy/%d/slow", e.PublicURL, up.Port), nil)
		req.Header.Set("Authorization", "Bearer "+apiToken)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "done" {
				err = fmt.Errorf("status %d %q", resp.StatusCode, body)
			}
		}
		tunneled <- err
	}()
	poll.Until(t, 30*time.Second, "the long polls held at cell 2", func() bool { return cell.Held() == polls })
	poll.Until(t, 10*time.Second, "the tunnel request at the upstream", func() bool { return up.slow.Load() == 1 })

	// The reload: cells 2 and 3 swap servers, a new job-JWT key k2 replaces k1,
	// agent key B replaces A.
	newKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&newKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	newPub := filepath.Join(dir, "k2.pub")
	writeFile(t, newPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	writeFile(t, agentKey, secretB)
	cfg := baseConfig()
	cfg.Listen = listenConfig{Public: strings.TrimPrefix(e.PublicURL, "http://"), Ops: strings.TrimPrefix(e.OpsURL, "http://")}
	for _, id := range []uint64{1, 2, 3} {
		url := env.cell(id).URL
		switch id {
		case 2:
			url = env.cell(3).URL
		case 3:
			url = env.cell(2).URL
		}
		cfg.Cells = append(cfg.Cells, cellConfig{ID: id, URL: url, Legacy: id == 1, IDRanges: cellRanges(id)})
	}
	cfg.Tokens.JobJWT.Keys = []keyConfig{{KID: "k2", Alg: "RS256", File: newPub}}
	// agents.wait cannot change without a restart: the reload says so and keeps 5s.
	cfg.Agents = &agentsConfig{Keys: []keyConfig{{Alg: "HS256", File: agentKey}}, Wait: "6s"}
	cfg.GitLabAPI = &secretConfig{SecretFile: apiKey}
	cfg.Shutdown.Grace = "5s"
	cfg.Log = logConfig{Level: "debug", Format: "text"}
	writeFile(t, e.ConfigPath, mustYAML(t, cfg))
	if err := e.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the reload to be applied", func() bool {
		n, err := metricSum(e.OpsURL+"/metrics", "edge_config_generation", "")
		return err == nil && n == 2
	})

	if out := e.out.String(); !strings.Contains(out, `needs a restart`) || !strings.Contains(out, "setting=agents.wait") {
		t.Errorf("the reload did not name agents.wait as needing a restart")
	}

	// New requests see the new config while the old ones are still held.
	t.Run("changed cell", func(t *testing.T) {
		env.mark()
		// Cell 3's server does not know the token (403): what matters is that it got the request.
		env.send(t, runner1711().discovery(runnerToken(t, 2)))
		if recs := env.newRecords(); len(recs[3]) != 1 || len(recs[2]) != 0 {
			t.Errorf("token naming cell 2 after the reload: records %v, want one at cell 3's server", recordCounts(recs))
		}
	})
	t.Run("rotated job-JWT key", func(t *testing.T) {
		mint := func(key *rsa.PrivateKey, kid string) string {
			now := time.Now()
			raw, err := tokens.MintJobJWT(tokens.MintJobOptions{Key: key, Algorithm: "RS256", KID: kid, Issuer: jwtIssuer,
				Audience: jwtAudience, Keys: tokens.Keys{}.Set(tokens.KeyCell, 3), JobID: outsideRanges + 5,
				IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			return "glcbt-" + raw
		}
		for _, tt := range []struct {
			name  string
			token string
			want  uint64
		}{
			{"new key routes by its claim", mint(newKey, "k2"), 2}, // cell 3's id, now at cell 2's server
			{"old key is no longer trusted", mint(demoPrivateKey(t), jwtKID), 1},
		} {
			env.mark()
			a := env.send(t, runner1711().downloadArtifacts(outsideRanges+5, tt.token))
			recs := env.newRecords()
			if len(recs[tt.want]) != 1 {
				t.Errorf("%s: status %d, records %v, want one at cell %d", tt.name, a.status, recordCounts(recs), tt.want)
			}
		}
	})
	t.Run("replaced agent key", func(t *testing.T) {
		status, _, conn := dialConnect(t, e, "", mintAgentRaw(t, "a2", secretA), nil)
		conn.Close()
		if status != http.StatusUnauthorized {
			t.Errorf("agent token signed with the old key: status %d, want 401", status)
		}
		status, _, conn = dialConnect(t, e, "", mintAgentRaw(t, "a3", secretB), nil)
		conn.Close()
		if status != http.StatusSwitchingProtocols {
			t.Errorf("agent token signed with the new key: status %d, want 101", status)
		}
	})

	// Nothing in flight failed: the held tunnel request and every long poll end well.
	up.releaseSlow()
	if err := <-tunneled; err != nil {
		t.Errorf("tunnel request in flight across the reload: %v", err)
	}
	var failed []string
	for range polls {
		if err := <-polled; err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d long polls in flight across the reload failed; first: %s", len(failed), polls, failed[0])
	}
	isJobRequest := func(r cellsim.Record) bool { return r.Route == cellsim.RouteJobRequest }
	if n := cell.Count(isJobRequest); n != polls {
		t.Errorf("job requests at cell 2: %d, want exactly %d (none retried)", n, polls)
	}
	// The agent that connected with the old key keeps its tunnel.
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/-/api/v1/agents/a1/proxy/%d/headers", e.PublicURL, up.Port), nil)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("request through the tunnel opened before the reload: status %d", resp.StatusCode)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mintAgentRaw(t *testing.T, id string, key []byte) string {
	t.Helper()
	now := time.Now()
	tok, err := tokens.MintAgentToken(tokens.MintAgentOptions{Key: key, Algorithm: "HS256", Audience: tokens.DefaultAgentAudience,
		AgentID: id, IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func mustYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func recordCounts(recs map[uint64][]cellsim.Record) map[uint64]int {
	out := map[uint64]int{}
	for id, r := range recs {
		out[id] = len(r)
	}
	return out
}
