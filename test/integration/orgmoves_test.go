package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/tokens"
)

// Organization moves, as GitLab's migration tooling makes them through the API for GitLab, with
// two edges sharing Redis: a move made through one edge is in force at the other within 1 s, a
// refused one writes nothing, and forgetting a move is fleet-wide.
func TestOrganizationMovesFleetWide(t *testing.T) {
	c := newTunnelClusterWith(t, 2, func(cfg *edgeConfig) {
		cfg.Cells = append(cfg.Cells, cellConfig{ID: 2, URL: "http://127.0.0.2:9"}, cellConfig{ID: 3, URL: "http://127.0.0.3:9"})
	})
	call := func(e *edgeProc, method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, e.PublicURL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.apiToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const cell, list = "/-/api/v1/organizations/7/cell", "/-/api/v1/organizations/moves"
	e1, e2 := c.edges[0], c.edges[1]
	if status, body := call(e1, "PUT", cell, `{"cell":3,"phase":"freeze"}`); status != 200 || !strings.Contains(body, `"phase":"freeze"`) {
		t.Fatalf("freeze through edge 1: %d %s", status, body)
	}
	start := time.Now()
	for {
		if _, body := call(e2, "GET", list, ""); strings.Contains(body, `"org_id":7,"cell":3,"phase":"freeze"`) {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatalf("edge 2 did not have the move within 1 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("edge 2 had the move %v after edge 1 answered", time.Since(start))
	if status, body := call(e2, "PUT", cell, `{"cell":3,"phase":"switched"}`); status != 200 {
		t.Fatalf("switch through edge 2: %d %s", status, body)
	}
	for _, e := range c.edges {
		waitMetric(t, e, `edge_org_moves{phase="switched"} 1`)
		for path, want := range map[string]string{"/status.json": `"org_moves": [
    {
      "org_id": 7,
      "cell": 3,
      "phase": "switched"`, "/status": `<td>7</td><td>3</td>`} {
			resp, err := http.Get(e.OpsURL + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), want) {
				t.Errorf("%s%s has no %s", e.OpsURL, path, want)
			}
		}
	}
	// edge explain, offline on an edge's config, reads the fleet's moves and names the one that
	// decides.
	runner := routableToken(t, "glrt-t2_", 7, tokens.Keys{}.Set(tokens.KeyOrganization, 7).Set(tokens.KeyCell, 2))
	out, errOut, code := runEdge(t, "explain", "--config", e2.ConfigPath, "-X", "POST", "-H", "RUNNER-TOKEN: "+runner, "http://edge/api/v4/runners/verify")
	if code != 0 || !strings.Contains(out, "org_move") || !strings.Contains(out, "org_id") {
		t.Errorf("edge explain after the switch: exit %d\n%s%s", code, out, errOut)
	}
	for _, bad := range []struct {
		path, body string
		status     int
	}{
		{cell, `{"cell":3,"phase":"freeze"}`, 409},
		{cell, `{"cell":4,"phase":"freeze"}`, 400},
		{"/-/api/v1/organizations/0/cell", `{"cell":3,"phase":"freeze"}`, 400},
	} {
		if status, body := call(e1, "PUT", bad.path, bad.body); status != bad.status {
			t.Errorf("PUT %s %s: %d %s, want %d", bad.path, bad.body, status, body, bad.status)
		}
	}
	time.Sleep(100 * time.Millisecond) // a refusal that wrote would have reached edge 2 by now
	if _, body := call(e2, "GET", list, ""); !strings.Contains(body, `"org_id":7,"cell":3,"phase":"switched"`) || strings.Count(body, "org_id") != 1 {
		t.Errorf("edge 2 after the refusals: %s", body)
	}
	if status, _ := call(e2, "DELETE", cell, ""); status != 204 {
		t.Fatalf("forget through edge 2: %d", status)
	}
	start = time.Now()
	for {
		if _, body := call(e1, "GET", list, ""); strings.TrimSpace(body) == `{"moves":[]}` {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatalf("edge 1 still had the move 1 s after it was forgotten")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, _ := call(e1, "DELETE", cell, ""); status != 404 {
		t.Errorf("forgetting again: %d, want 404", status)
	}
	// From a shell: edge org, on an edge's config, through the same Redis.
	if out, errOut, code := runEdge(t, "org", "move", "--config", e1.ConfigPath, "--org", "9", "--cell", "2", "--phase", "freeze"); code != 0 || !strings.Contains(out, `"org_id":9,"cell":2,"phase":"freeze"`) {
		t.Errorf("edge org move: exit %d, %s %s", code, out, errOut)
	}
	start = time.Now()
	for {
		if _, body := call(e2, "GET", list, ""); strings.Contains(body, `"org_id":9`) {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatalf("edge 2 did not have the move made by edge org within 1 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, _, code := runEdge(t, "org", "list", "--config", e2.ConfigPath); code != 0 || !strings.Contains(out, `"org_id":9`) {
		t.Errorf("edge org list: exit %d, %s", code, out)
	}
	if _, errOut, code := runEdge(t, "org", "move", "--config", e1.ConfigPath, "--org", "9", "--cell", "4", "--phase", "freeze"); code != 2 || !strings.Contains(errOut, "unknown cell") {
		t.Errorf("edge org move to an unknown cell: exit %d, %s; want 2 naming it", code, errOut)
	}
	if out, _, code := runEdge(t, "org", "forget", "--config", e1.ConfigPath, "--org", "9"); code != 0 {
		t.Errorf("edge org forget: exit %d, %s", code, out)
	}
	if _, _, code := runEdge(t, "org", "forget", "--config", e1.ConfigPath, "--org", "9"); code != 2 {
		t.Errorf("edge org forget again: exit %d, want 2", code)
	}
	req, _ := http.NewRequest("GET", e1.PublicURL+list, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("without a token: %v %v, want 401", resp, err)
	}
}

// waitMetric waits up to 1 s for a line of e's /metrics.
func waitMetric(t *testing.T, e *edgeProc, line string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		resp, err := http.Get(e.OpsURL + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), line+"\n") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q in /metrics", e.PublicURL, line)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
