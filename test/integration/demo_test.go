package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestDemo runs the demo (cmd/edge-demo, which runs edge) on free ports, then every command it
// prints, in order and in one bash session (JOB_TOKEN and API carry over), and checks that each
// answers as printed. Ctrl-C then stops the demo.
func TestDemo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("the demo prints curl commands; curl is needed to try them: %v", err)
	}
	public, ops := freeAddr(t), freeAddr(t)
	demo, stdout := startDemo(t, "--listen", public, "--ops", ops, "--ssh", freeAddr(t))
	poll.Until(t, 30*time.Second, "the demo to print what to try", func() bool {
		select {
		case <-demo.exited:
			t.Fatalf("edge demo exited before printing what to try: %v", demo.waitErr)
		default:
		}
		return strings.Contains(stdout.String(), "Ctrl-C stops everything")
	})
	cmds := demoCommands(stdout.String())
	runDemoCommands(t, cmds)

	checks := []struct {
		step, what string
		check      func(out string) error
	}{
		{"1", "the routable runner token in RUNNER-TOKEN", curlAnswer(http.StatusOK, "2", nil)},
		{"2", "the job request with the token in the body", func(out string) error {
			if tok := strings.TrimSpace(out); !strings.HasPrefix(tok, "glcbt-") || strings.ContainsAny(tok, " \n") {
				return fmt.Errorf("printed %q, want one glcbt- job token", out)
			}
			return nil
		}},
		{"3", "the artifact download with the job token", curlAnswer(http.StatusFound, "2", wantLocation)},
		{"3", "the artifact download with no token", curlAnswer(http.StatusFound, "2", wantLocation)},
		{"4", "the token edge cannot read", curlAnswer(http.StatusOK, "1", nil)},
		{"5", "two tokens naming different cells", curlAnswer(http.StatusBadRequest, "", wantEdgeError(""))},
		{"6", "edge explain", wantJSON(func(v map[string]any) error {
			if v["cell"] != 2.0 {
				return fmt.Errorf("cell %v, want 2", v["cell"])
			}
			return nil
		})},
		{"6", "edge token decode", wantJSON(func(v map[string]any) error {
			if keys, _ := v["keys"].(map[string]any); keys["c"] != 2.0 {
				return fmt.Errorf("keys %v, want c 2", v["keys"])
			}
			return nil
		})},
		{"7", "the API header variable", wantNoOutput},
		{"7", "the agent's connections", wantJSON(func(v map[string]any) error {
			conns, _ := v["connections"].([]any)
			for _, c := range conns {
				if c, _ := c.(map[string]any); c["agent_id"] == "demo-agent" {
					return nil
				}
			}
			return fmt.Errorf("connections %v do not list demo-agent", v["connections"])
		})},
		{"7", "the workspace through the agent", curlAnswer(http.StatusOK, "", func(_ http.Header, body string) error {
			if !strings.Contains(body, "hello from the demo workspace") {
				return fmt.Errorf("body %q is not the workspace's", body)
			}
			return nil
		})},
		{"7", "an agent that is not connected", curlAnswer(http.StatusGatewayTimeout, "", wantEdgeError("nobody"))},
		{"8", "a workspace without a session", curlAnswer(http.StatusFound, "", func(h http.Header, _ string) error {
			if loc := h.Get("Location"); !strings.HasPrefix(loc, "http://auth.ws.localhost:") || !strings.Contains(loc, "/oauth/start?login=") {
				return fmt.Errorf("Location %q, want the login on the auth host", loc)
			}
			return nil
		})},
		{"metrics", "the status page's data", wantJSON(func(v map[string]any) error {
			if cells, _ := v["cells"].([]any); len(cells) == 0 {
				return fmt.Errorf("cells %v, want the demo's cells", v["cells"])
			}
			return nil
		})},
		{"metrics", "the metrics", func(out string) error {
			if !regexp.MustCompile(`(?m)^edge_requests_total\{`).MatchString(out) {
				return fmt.Errorf("no edge_requests_total line in %q", out)
			}
			return nil
		}},
		{"metrics", "readiness", wantJSON(func(v map[string]any) error {
			if v["ready"] != true {
				return fmt.Errorf("ready %v, want true", v["ready"])
			}
			return nil
		})},
	}
	if len(cmds) != len(checks) {
		t.Errorf("the demo prints %d commands, the test checks %d", len(cmds), len(checks))
	}
	for i := range min(len(cmds), len(checks)) {
		c, want := cmds[i], checks[i]
		if c.step != want.step {
			t.Errorf("command %d (%s) is in step %q, want step %q (%s)", i, c.line, c.step, want.step, want.what)
			continue
		}
		if err := want.check(c.out); err != nil {
			t.Errorf("step %s, %s: %v\ncommand: %s\noutput:\n%s", c.step, want.what, err, c.line, c.out)
		}
	}

	// Step 9, when sshd is installed (make deps installs it): the printed ssh command works.
	if m := regexp.MustCompile(`personal access token, (\S+):\n#\s+ssh -p (\d+) demo@(\S+)`).FindStringSubmatch(stdout.String()); m != nil {
		token, port, host := strings.TrimSuffix(m[1], ":"), m[2], m[3]
		c := newSSHClient(t, net.JoinHostPort(host, port), "demo", token)
		if out, stderr, code := c.run(t, "echo hi from the demo workspace"); code != 0 || out != "hi from the demo workspace\n" {
			t.Errorf("step 9's ssh: exit %d %q %q", code, out, stderr)
		}
	} else if _, err := os.Stat("/usr/sbin/sshd"); err == nil {
		t.Errorf("sshd is installed but the demo printed no ssh step:\n%s", stdout.String())
	}

	if err := demo.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("Ctrl-C: %v", err)
	}
	if code, err := demo.wait(30 * time.Second); err != nil || code != 0 {
		t.Errorf("after Ctrl-C: exit code %d (%v), want 0", code, err)
	}
}

// TestDemoBusyPort: an address the demo cannot listen on fails it at once, before it prints or
// starts anything, naming the flag that chooses another.
func TestDemoBusyPort(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer busy.Close()
	for _, flag := range []string{"listen", "ops"} {
		t.Run(flag, func(t *testing.T) {
			addrs := map[string]string{"listen": freeAddr(t), "ops": freeAddr(t)}
			addrs[flag] = busy.Addr().String()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, demoBinaryPath(), "--listen", addrs["listen"], "--ops", addrs["ops"], "--ssh", freeAddr(t))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || (exit.ExitCode() != 1 && exit.ExitCode() != 2) {
				t.Fatalf("edge demo with --%s on a busy port: %v, want exit code 1 or 2\nstderr: %s", flag, err, stderr.String())
			}
			if want := busy.Addr().String() + " is in use"; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), want)
			}
			if want := "--" + flag + " "; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr %q does not name %s", stderr.String(), want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: got %q, want nothing (nothing started)", stdout.String())
			}
		})
	}
}

// TestDemoApart: the router binary has no demo, only a pointer to it (exit 2, one line); the demo
// command has its --help.
func TestDemoApart(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runEdge(t, "demo", "--listen", freeAddr(t))
	if code != 2 || stdout != "" || !strings.Contains(stderr, "make demo") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("edge demo: exit %d, stdout %q, stderr %q; want exit 2 and one line naming make demo", code, stdout, stderr)
	}
	out, err := exec.Command(demoBinaryPath(), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Usage: edge-demo") || !strings.Contains(string(out), "-edge") {
		t.Errorf("edge-demo --help: %v, output %q; want exit 0 and its usage", err, out)
	}
}

// startDemo runs the demo with its standard output kept apart from its logs, and stops it
// when the test ends.
func startDemo(t *testing.T, args ...string) (*process, *cappedBuffer) {
	t.Helper()
	cmd := exec.Command(demoBinaryPath(), args...)
	p := &process{name: "edge demo", cmd: cmd, out: &cappedBuffer{max: 4 << 20}, exited: make(chan struct{})}
	stdout := &cappedBuffer{max: 1 << 20}
	cmd.Stdout, cmd.Stderr = stdout, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start edge demo: %v", err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop(10 * time.Second)
		if t.Failed() {
			t.Logf("edge demo printed:\n%s\nand logged:\n%s", stdout.String(), p.out.String())
		}
	})
	return p, stdout
}

// demoCommand is one command the demo prints, the step it is printed under ("1".."7", or
// "metrics") and, once run, what it wrote.
type demoCommand struct {
	step, line, out string
}

var demoStepRE = regexp.MustCompile(`^# (\d+)\. `)

// demoCommands are the lines between "Try:" and "Ctrl-C" that are neither empty nor comments.
// `go run ./cmd/edge` becomes the edge binary under test.
func demoCommands(printed string) []demoCommand {
	_, tries, _ := strings.Cut(printed, "Try:\n")
	tries, _, _ = strings.Cut(tries, "Ctrl-C stops everything")
	var cmds []demoCommand
	step := ""
	for line := range strings.Lines(tries) {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "# Metrics"):
			step = "metrics"
		case demoStepRE.MatchString(line):
			step = demoStepRE.FindStringSubmatch(line)[1]
		case strings.HasPrefix(line, "#"):
		default:
			cmds = append(cmds, demoCommand{step: step, line: strings.ReplaceAll(line, "go run ./cmd/edge", edgeBinaryPath())})
		}
	}
	return cmds
}

// runDemoCommands runs cmds in order in one bash session and fills in what each wrote, split
// by a marker printed before each.
func runDemoCommands(t *testing.T, cmds []demoCommand) {
	t.Helper()
	const marker = "@@edge-demo-command"
	var script strings.Builder
	for i, c := range cmds {
		fmt.Fprintf(&script, "printf '\\n%s %d\\n'\n%s\n", marker, i, c.line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-s")
	sh.Stdin = strings.NewReader(script.String())
	sh.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	sh.Stdout, sh.Stderr = &stdout, &stderr
	if err := sh.Run(); err != nil {
		t.Errorf("bash: %v\nstderr:\n%s", err, stderr.String())
	}
	parts := regexp.MustCompile(`\n`+marker+` (\d+)\n`).Split(stdout.String(), -1)
	for i := range cmds {
		if i+1 < len(parts) {
			cmds[i].out = parts[i+1]
		}
	}
	if len(parts) != len(cmds)+1 {
		t.Errorf("bash ran %d of %d commands\nstderr:\n%s", len(parts)-1, len(cmds), stderr.String())
	}
}

// curlAnswer checks what `curl -si` printed: the status, the cell that answered (X-Demo-Cell;
// "" means none, edge answered itself or the agent did) and, with more, the rest.
func curlAnswer(status int, cell string, more func(h http.Header, body string) error) func(string) error {
	return func(out string) error {
		head, body, ok := strings.Cut(out, "\r\n\r\n")
		if !ok {
			return errors.New("no HTTP answer")
		}
		statusLine, fields, _ := strings.Cut(head, "\r\n")
		parts := strings.Fields(statusLine)
		if len(parts) < 2 || !strings.HasPrefix(parts[0], "HTTP/") {
			return fmt.Errorf("status line %q", statusLine)
		}
		h, err := textproto.NewReader(bufio.NewReader(strings.NewReader(fields + "\r\n\r\n"))).ReadMIMEHeader()
		if err != nil {
			return fmt.Errorf("headers: %w", err)
		}
		if got, _ := strconv.Atoi(parts[1]); got != status {
			return fmt.Errorf("status %d, want %d", got, status)
		}
		if got := http.Header(h).Get("X-Demo-Cell"); got != cell {
			return fmt.Errorf("X-Demo-Cell %q, want %q", got, cell)
		}
		if more != nil {
			return more(http.Header(h), body)
		}
		return nil
	}
}

func wantLocation(h http.Header, _ string) error {
	if h.Get("Location") == "" {
		return errors.New("a redirect with no Location")
	}
	return nil
}

// wantEdgeError wants edge's error body, {"error": ..., "message": ...}, the message naming
// mention when it is not empty.
func wantEdgeError(mention string) func(http.Header, string) error {
	return func(h http.Header, body string) error {
		if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			return fmt.Errorf("Content-Type %q, want application/json", ct)
		}
		var e struct{ Error, Message string }
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			return fmt.Errorf("body is not JSON: %w", err)
		}
		if e.Error == "" || e.Message == "" {
			return fmt.Errorf("body %q lacks error or message", body)
		}
		if !strings.Contains(e.Message, mention) {
			return fmt.Errorf("message %q does not name %q", e.Message, mention)
		}
		return nil
	}
}

func wantJSON(check func(map[string]any) error) func(string) error {
	return func(out string) error {
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			return fmt.Errorf("not a JSON object: %w", err)
		}
		return check(v)
	}
}

func wantNoOutput(out string) error {
	if out != "" {
		return fmt.Errorf("printed %q, want nothing", out)
	}
	return nil
}
