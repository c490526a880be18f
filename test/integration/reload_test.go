package integration

import (
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/tokens"
)

// TestConfigReload: a new cell URL applies on SIGHUP and when the file is replaced by a rename
// (as ConfigMap volumes do), with no restart; a bad file is refused and the old config stays.
func TestConfigReload(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	e := env.edge
	token := routableToken(t, "glrt-", 7, tokens.Keys{}.Set(tokens.KeyCell, 2).Set(tokens.KeyOrganization, 1))
	// routedTo sends a request whose token names cell 2 and says which cell server got it.
	routedTo := func() uint64 {
		env.mark()
		req, _ := http.NewRequest("GET", e.PublicURL+"/api/v4/runners/router/discovery", nil)
		req.Header.Set("RUNNER-TOKEN", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for id, rs := range env.newRecords() {
			if len(rs) > 0 {
				return id
			}
		}
		return 0
	}
	if got := routedTo(); got != 2 {
		t.Fatalf("before reload: reached cell %d, want 2", got)
	}
	original, err := os.ReadFile(e.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	// Point cell 2's id at cell 3's server: the same token now lands on the third server.
	url2, url3 := env.cell(2).URL, env.cell(3).URL
	swapped := strings.Replace(string(original), url2, "SWAP", 1)
	swapped = strings.Replace(swapped, url3, url2, 1)
	swapped = strings.Replace(swapped, "SWAP", url3, 1)
	if swapped == string(original) {
		t.Fatalf("config does not name the cell URLs:\n%s", original)
	}

	t.Run("SIGHUP", func(t *testing.T) {
		if err := os.WriteFile(e.ConfigPath, []byte(swapped), 0o600); err != nil {
			t.Fatal(err)
		}
		e.cmd.Process.Signal(syscall.SIGHUP)
		poll.Until(t, 10*time.Second, "the reload to apply", func() bool { return routedTo() == 3 })
	})
	t.Run("bad file is refused", func(t *testing.T) {
		if err := os.WriteFile(e.ConfigPath, []byte("cells: [{id: 1}]\nbogus: true\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e.cmd.Process.Signal(syscall.SIGHUP)
		poll.Until(t, 10*time.Second, "the refusal to be counted", func() bool {
			n, err := metricSum(e.OpsURL+"/metrics", "edge_config_reloads_total", `result="error"`)
			return err == nil && n >= 1
		})
		if got := routedTo(); got != 3 {
			t.Errorf("after a bad file: reached cell %d, want 3 (the running config)", got)
		}
	})
	t.Run("rename swap is noticed", func(t *testing.T) {
		tmp := e.ConfigPath + ".new"
		if err := os.WriteFile(tmp, original, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, e.ConfigPath); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, "the watcher to apply the swapped file", func() bool { return routedTo() == 2 })
		n, err := metricSum(e.OpsURL+"/metrics", "edge_config_generation", "")
		if err != nil || n != 3 {
			t.Errorf("edge_config_generation: got %v (%v), want 3", n, err)
		}
	})
}
