package integration

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/tokens"
)

// An organization moves from cell 2 to cell 3 while its runner keeps working, with two edges
// sharing Redis and the runner's wire protocol field for field: a job claimed at cell 2 runs on
// while the move is made through edge 1; within 1 s both edges hold the runner's polls back (no
// cell sees them while frozen); the running job's trace and final state reach cell 2; once
// switched, the next job comes from cell 3 and finishes there; no job is handed out twice.
func TestOrganizationMoveWhileARunnerWorks(t *testing.T) {
	dir := t.TempDir()
	secret := []byte(strings.Repeat("m", 64))
	for _, name := range []string{"api.key", "internal.key"} {
		if err := os.WriteFile(filepath.Join(dir, name), secret, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	apiToken, err := tokens.MintGitLabAPIToken(secret, "gitlab", "gitlab-kas", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cells := map[uint64]*cellsim.Server{}
	cfg := baseConfig()
	cfg.Log = logConfig{Level: "debug", Format: "text"}
	for _, id := range []uint64{1, 2, 3} {
		s, err := cellsim.NewServer("", cellsim.Options{CellID: id, Legacy: id == 1, JobIDBase: jobIDBase(id), Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		cells[id] = s
		cfg.Cells = append(cfg.Cells, cellConfig{ID: id, URL: s.URL, Legacy: id == 1, IDRanges: cellRanges(id)})
	}
	redis := startRedis(t)
	cfg.Registry = &registryConfig{Redis: redisConfig{Addr: redis.Addr, KeyPrefix: "edge"}}
	cfg.GitLabAPI = &secretConfig{SecretFile: filepath.Join(dir, "api.key")}
	cfg.Internal = &secretConfig{SecretFile: filepath.Join(dir, "internal.key")}
	var edges []*edgeProc
	for range 2 {
		cfg.Listen = listenConfig{Internal: freeAddr(t)}
		edges = append(edges, startEdge(t, cfg))
	}
	client := newClient(8)
	v := runner1711()
	runner := routableToken(t, "glrt-t2_", 70, tokens.Keys{}.Set(tokens.KeyCell, 2).Set(tokens.KeyOrganization, 7).Set(tokens.KeyRunnerType, 1))
	cells[3].AcceptToken(runner) // the organization's data, runners included, is copied to cell 3
	move := func(phase string) {
		t.Helper()
		req, _ := http.NewRequest("PUT", edges[0].PublicURL+"/-/api/v1/organizations/7/cell", strings.NewReader(`{"cell":3,"phase":"`+phase+`"}`))
		req.Header.Set("Authorization", "Bearer "+apiToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("move to %s: %d %s", phase, resp.StatusCode, b)
		}
	}
	polls := func(id uint64) int {
		return cells[id].Count(func(r cellsim.Record) bool { return r.Route == cellsim.RouteJobRequest })
	}

	// A job claimed at cell 2, through edge 1.
	jobA, err := cells[2].AddJob()
	if err != nil {
		t.Fatal(err)
	}
	a := sendTo(t, client, edges[0].PublicURL, v.requestJob(runner, "x"))
	if a.status != 201 {
		t.Fatalf("first poll: %d", a.status)
	}
	claimed := decodeJob(t, a)
	if claimed.ID != jobA {
		t.Fatalf("claimed job %d, want %d from cell 2", claimed.ID, jobA)
	}

	// The move begins: within 1 s no edge lets the runner claim a job anywhere.
	move("freeze")
	before := polls(2) + polls(3)
	for _, e := range edges {
		deadline := time.Now().Add(time.Second)
		for {
			a := sendTo(t, client, e.PublicURL, v.requestJob(runner, "x"))
			if a.status == 204 && a.header.Get("Retry-After") != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the runner's poll is %d a second after the freeze, want 204 with Retry-After", e.PublicURL, a.status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for i := 0; i < 5; i++ {
		if a := sendTo(t, client, edges[i%2].PublicURL, v.requestJob(runner, "x")); a.status != 204 {
			t.Errorf("poll %d while frozen: %d, want 204", i, a.status)
		}
	}
	if n := polls(2) + polls(3); n > before+2 {
		// Edge 2 may have sent a poll or two before the move reached it (the wait above).
		t.Errorf("cells saw %d polls while frozen", n-before)
	}

	// The running job's trace and final state reach cell 2, through edge 2.
	trace := []byte("building...\n")
	if a := sendTo(t, client, edges[1].PublicURL, v.patchTrace(jobA, claimed.Token, 0, trace)); a.status != 202 {
		t.Errorf("trace of the running job: %d", a.status)
	}
	if a := sendTo(t, client, edges[1].PublicURL, v.updateJob(jobA, claimed.Token, "success", len(trace))); a.status != 200 {
		t.Errorf("final state of the running job: %d", a.status)
	}
	if j, _ := cells[2].Job(jobA); j.State != "success" || string(j.Trace) != string(trace) {
		t.Errorf("job %d at cell 2: state %q trace %q", jobA, j.State, j.Trace)
	}

	// Switched: the next job comes from cell 3, through either edge, and finishes there.
	move("switched")
	jobB, err := cells[3].AddJob()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	var next jobAnswer
	for {
		a := sendTo(t, client, edges[1].PublicURL, v.requestJob(runner, "x"))
		if a.status == 201 {
			next = decodeJob(t, a)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no job from cell 3 a second after the switch (last poll %d)", a.status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if next.ID != jobB {
		t.Fatalf("job %d after the switch, want %d from cell 3", next.ID, jobB)
	}
	if a := sendTo(t, client, edges[0].PublicURL, v.updateJob(jobB, next.Token, "success", 0)); a.status != 200 {
		t.Errorf("final state of job %d: %d", jobB, a.status)
	}
	if j, _ := cells[3].Job(jobB); j.State != "success" {
		t.Errorf("job %d at cell 3: state %q", jobB, j.State)
	}

	// No job handed out twice, none misrouted.
	for id, c := range cells {
		handed := map[uint64]int{}
		for _, r := range c.Records() {
			if r.Route == cellsim.RouteJobRequest && r.Status == 201 {
				handed[r.JobID]++
			}
			if r.Misrouted {
				t.Errorf("cell %d: misrouted %s", id, r)
			}
		}
		for job, n := range handed {
			if n != 1 {
				t.Errorf("cell %d handed job %d out %d times", id, job, n)
			}
		}
	}
	t.Logf("polls seen: cell 2 %d, cell 3 %d", polls(2), polls(3))
}
