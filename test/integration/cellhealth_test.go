package integration

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"gitlab.com/edge/edge/internal/testkit/browsertest"
	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

// cellAnswer is what a request routed to cell 2 (by the job id in its path) got: the status and,
// for edge's own answers, the error cause.
type cellAnswer struct {
	status     int
	cause      string
	retryAfter string
}

func askCell2(t *testing.T, e *env) cellAnswer {
	t.Helper()
	resp, err := e.client.Get(e.edge.PublicURL + "/api/v4/jobs/2000001/artifacts")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var e2 struct {
		Error string `json:"error"`
	}
	if resp.Header.Get("Content-Type") == "application/json" {
		_ = json.Unmarshal(body, &e2)
	}
	return cellAnswer{status: resp.StatusCode, cause: e2.Error, retryAfter: resp.Header.Get("Retry-After")}
}

// TestCellHealthDeadAndBack: a cell killed is reported down and answered 503 cell_unavailable
// with Retry-After, without a dial (edge's upstream error count stays); it is back once it
// listens again and its check passes.
func TestCellHealthDeadAndBack(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c *edgeConfig) {
		c.Cells[1].Health = &healthConfig{Interval: "200ms", Timeout: "100ms", UnhealthyAfter: 2}
	}})
	metrics := e.edge.OpsURL + "/metrics"
	poll.Until(t, 5*time.Second, "cell 2 up", func() bool {
		v, err := metricSum(metrics, "edge_cell_up", `cell="2"`)
		return err == nil && v == 1
	})
	if a := askCell2(t, e); a.cause != "" {
		t.Fatalf("cell 2 alive: got %+v, want the cell's answer", a)
	}

	addr := strings.TrimPrefix(e.cell(2).URL, "http://")
	e.cell(2).Close()
	died := time.Now()
	var first cellAnswer
	poll.UntilState(t, 10*time.Second, "a 503 cell_unavailable for the dead cell", func() (bool, string) {
		first = askCell2(t, e)
		return first.status == http.StatusServiceUnavailable && first.cause == "cell_unavailable", first.cause
	})
	t.Logf("cell death to the first immediate 503: %v", time.Since(died).Round(time.Millisecond))
	if n, err := strconv.Atoi(first.retryAfter); err != nil || n < 1 {
		t.Errorf("Retry-After %q, want whole seconds >= 1", first.retryAfter)
	}
	dials, err := metricSum(metrics, "edge_upstream_errors_total", `cell="2"`)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if a := askCell2(t, e); a.status != http.StatusServiceUnavailable || a.cause != "cell_unavailable" || a.retryAfter == "" {
			t.Fatalf("cell 2 down: got %+v, want 503 cell_unavailable with Retry-After", a)
		}
	}
	if after, _ := metricSum(metrics, "edge_upstream_errors_total", `cell="2"`); after != dials {
		t.Errorf("upstream errors for cell 2 went from %v to %v while it was down: edge dialled it", dials, after)
	}
	if v, _ := metricSum(metrics, "edge_cell_up", `cell="2"`); v != 0 {
		t.Errorf("edge_cell_up{cell=\"2\"} = %v while it is down, want 0", v)
	}

	back, err := cellsim.NewServer(addr, cellsim.Options{CellID: 2, JobIDBase: jobIDBase(2), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("restart cell 2 on %s: %v", addr, err)
	}
	t.Cleanup(func() { back.Close() })
	poll.UntilState(t, 10*time.Second, "cell 2 answering again", func() (bool, string) {
		a := askCell2(t, e)
		return a.cause == "", a.cause
	})
	if v, _ := metricSum(metrics, "edge_cell_up", `cell="2"`); v != 1 {
		t.Errorf("edge_cell_up{cell=\"2\"} = %v once it is back, want 1", v)
	}
}

// TestCellTwoAddressesOneDead: a cell with two addresses, one of which nothing listens on,
// serves every GET: a request that could not connect goes to the other address.
func TestCellTwoAddressesOneDead(t *testing.T) {
	dead := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return "http://" + ln.Addr().String()
	}()
	e := newEnv(t, envOptions{config: func(c *edgeConfig) {
		c.Cells[1].URLs = []string{dead, c.Cells[1].URL}
		c.Cells[1].URL = ""
	}})
	for i := range 50 {
		if a := askCell2(t, e); a.cause != "" {
			t.Fatalf("GET %d: %+v, want the cell's answer", i, a)
		}
	}
	if n := len(e.cell(2).Records()); n != 50 {
		t.Errorf("cell 2 saw %d requests, want 50", n)
	}
	if v, err := metricSum(e.edge.OpsURL+"/metrics", "edge_cell_ejections_total", `cell="2"`); err != nil || v < 1 {
		t.Errorf("edge_cell_ejections_total{cell=\"2\"} = %v (%v), want the dead address ejected", v, err)
	}
}

// TestStatusPageShowsCellDownAndBack: Chromium keeps /status open on the ops listener; the page
// refreshes itself and shows cell 2 going down when it is killed and coming back when it
// listens again, styled (its CSP allows its own style) and with the refusal that the dead cell
// caused.
func TestStatusPageShowsCellDownAndBack(t *testing.T) {
	browsertest.Chromium(t)
	e := newEnv(t, envOptions{config: func(c *edgeConfig) {
		c.Cells[1].Health = &healthConfig{Interval: "200ms", Timeout: "100ms", UnhealthyAfter: 2}
	}})
	ctx := browsertest.New(t)
	browsertest.Open(t, ctx, e.edge.OpsURL+"/status", "#cell-2")
	state := func() string {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const c = document.querySelector('#cell-2 td:nth-child(2)');
			return c ? c.textContent.trim() + ' ' + getComputedStyle(c).color : '' })()`))
		if err != nil {
			return "" // the page is reloading itself
		}
		return s
	}
	poll.UntilState(t, 20*time.Second, "cell 2 shown up", func() (bool, string) {
		s := state()
		return strings.HasPrefix(s, "up rgb(7, 107, 44)"), s
	})
	addr := strings.TrimPrefix(e.cell(2).URL, "http://")
	e.cell(2).Close()
	askCell2(t, e) // a request the dead cell turns into a refusal (502, then 503s)
	poll.UntilState(t, 20*time.Second, "cell 2 shown down, in red", func() (bool, string) {
		s := state()
		return strings.HasPrefix(s, "down rgb(176, 0, 32)"), s
	})
	if text := browsertest.Text(t, ctx, "body"); !strings.Contains(text, "connection_refused") && !strings.Contains(text, "cell_unavailable") {
		t.Errorf("the page lists no refusal for the dead cell:\n%s", text)
	}
	back, err := cellsim.NewServer(addr, cellsim.Options{CellID: 2, JobIDBase: jobIDBase(2), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("restart cell 2: %v", err)
	}
	t.Cleanup(func() { back.Close() })
	poll.UntilState(t, 20*time.Second, "cell 2 shown up again", func() (bool, string) {
		s := state()
		return strings.HasPrefix(s, "up "), s
	})
}
