package integration

import (
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `edge demo` and tries what it prints: a routable token reaching cell 2, the
// legacy cell for an unreadable token, and the demo workspace through the demo agent's tunnel.
func TestDemo(t *testing.T) {
	t.Parallel()
	public, ops := freeAddr(t), freeAddr(t)
	p := startProcess(t, "edge demo", exec.Command(edgeBinaryPath(), "demo", "--listen", public, "--ops", ops))
	waitUntil(t, 20*time.Second, "the demo to print what to try", func() bool {
		return strings.Contains(p.out.String(), "Ctrl-C stops everything")
	})
	text := p.out.String()
	runnerToken := regexp.MustCompile(`RUNNER-TOKEN: (glrt-[A-Za-z0-9_.-]+)'`).FindStringSubmatch(text)
	apiToken := regexp.MustCompile(`API='Authorization: Bearer ([^']+)'`).FindStringSubmatch(text)
	workspace := regexp.MustCompile(`/-/api/v1/agents/demo-agent/proxy/(\d+)/hello`).FindStringSubmatch(text)
	if runnerToken == nil || apiToken == nil || workspace == nil {
		t.Fatalf("demo output lacks the runner token, API token or workspace URL:\n%s", text)
	}

	get := func(path string, header ...string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", "http://"+public+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	waitUntil(t, 20*time.Second, "the demo edge to answer", func() bool {
		resp, _ := get("/api/v4/runners/router/discovery", "RUNNER-TOKEN", runnerToken[1])
		return resp != nil
	})
	if resp, body := get("/api/v4/runners/router/discovery", "RUNNER-TOKEN", runnerToken[1]); resp.Header.Get("X-Demo-Cell") != "2" {
		t.Errorf("routable token: answered by cell %q, want 2 (%s)", resp.Header.Get("X-Demo-Cell"), body)
	}
	if resp, body := get("/api/v4/runners/router/discovery", "RUNNER-TOKEN", "glrt-legacy-opaque-token-0000"); resp.Header.Get("X-Demo-Cell") != "1" {
		t.Errorf("legacy token: answered by cell %q, want 1 (%s)", resp.Header.Get("X-Demo-Cell"), body)
	}
	var body string
	waitUntil(t, 20*time.Second, "the demo agent's workspace", func() bool {
		var resp *http.Response
		resp, body = get("/-/api/v1/agents/demo-agent/proxy/"+workspace[1]+"/hello", "Authorization", "Bearer "+apiToken[1])
		return resp != nil && resp.StatusCode == http.StatusOK
	})
	if !strings.Contains(body, "hello from the demo workspace") {
		t.Errorf("workspace answered %q", body)
	}
}
