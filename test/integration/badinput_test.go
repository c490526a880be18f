package integration

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestUnknownPathWithoutToken: anything edge does not know goes to the legacy cell, as
// GitLab's own router does.
func TestUnknownPathWithoutToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mark()
	for _, path := range []string{"/", "/api/v4/projects/1", "/-/health", "/api/v4/jobs/request/extra"} {
		a := e.send(t, outgoing{method: "GET", path: path, header: http.Header{"User-Agent": {"curl/8.5.0"}}})
		rec := e.expectAt(t, 1)
		if rec.Path != path || a.status != rec.Status {
			t.Errorf("%s: the legacy cell saw %s and answered %d; the client got %d", path, rec.Path, rec.Status, a.status)
		}
	}
}

// TestForwardedHeaders: X-Forwarded-* a client sends are replaced by edge's own view unless the
// client is a trusted proxy, and Edge-* headers from a client never reach a cell.
func TestForwardedHeaders(t *testing.T) {
	t.Parallel()
	spoofed := http.Header{
		"X-Forwarded-For":   {"203.0.113.9"},
		"X-Forwarded-Proto": {"https"},
		"X-Forwarded-Host":  {"evil.example.com"},
		"Edge-Cell":         {"3"},
		"Edge-Internal":     {"1"},
		"Edge-Route":        {"cell=3"},
	}
	for _, trusted := range []bool{false, true} {
		name := "untrusted client"
		if trusted {
			name = "trusted proxy"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{config: func(c *edgeConfig) {
				if trusted {
					c.Routing.TrustedProxies = []string{"127.0.0.1/32"}
				}
			}})
			e.mark()
			o := runner1711().verify(runnerToken(t, 2))
			for k, vs := range spoofed {
				o.header[k] = vs
			}
			a := e.send(t, o)
			wantStatus(t, a, http.StatusOK)
			rec := e.expectAt(t, 2)
			checkDelivered(t, rec, a)

			edgeHost := strings.TrimPrefix(e.edge.PublicURL, "http://")
			xff := rec.Header.Values("X-Forwarded-For")
			proto := rec.Header.Get("X-Forwarded-Proto")
			host := rec.Header.Get("X-Forwarded-Host")
			if trusted {
				if got := strings.Join(xff, ", "); got != "203.0.113.9, 127.0.0.1" {
					t.Errorf("X-Forwarded-For from a trusted proxy: got %q, want %q", got, "203.0.113.9, 127.0.0.1")
				}
				if proto != "https" || host != "evil.example.com" {
					t.Errorf("X-Forwarded-Proto/Host from a trusted proxy: got %q %q, want them kept", proto, host)
				}
			} else {
				if got := strings.Join(xff, ", "); got != "127.0.0.1" {
					t.Errorf("X-Forwarded-For from an untrusted client: got %q, want %q (the client's address only)", got, "127.0.0.1")
				}
				if proto != "http" || host != edgeHost {
					t.Errorf("X-Forwarded-Proto/Host from an untrusted client: got %q %q, want %q %q", proto, host, "http", edgeHost)
				}
			}
			for k := range rec.Header {
				if strings.HasPrefix(k, "Edge-") {
					t.Errorf("header %s reached the cell", k)
				}
			}
		})
	}
}

// TestUpstreamFailures: a cell that is down gives 502, one that does not answer in time 504,
// both with a JSON body.
func TestUpstreamFailures(t *testing.T) {
	t.Parallel()
	down := freeAddr(t) // nothing listens there
	e := newEnv(t, envOptions{config: func(c *edgeConfig) {
		c.Cells[2].URL = "http://" + down
		c.Routing.UpstreamTimeout = "1s"
	}})
	r := runner1711()

	t.Run("cell down", func(t *testing.T) {
		a := e.send(t, r.verify(runnerToken(t, 3)))
		wantStatus(t, a, http.StatusBadGateway)
		wantJSONError(t, a)
	})

	t.Run("cell does not answer in time", func(t *testing.T) {
		// The cell would answer only after a minute: a 504 and a canceled request at the cell
		// show that edge gave up by its own 1s upstream_timeout.
		cell := e.cell(2)
		cell.SetStall(time.Minute)
		e.mark()
		a := e.send(t, r.verify(runnerToken(t, 2)))
		wantStatus(t, a, http.StatusGatewayTimeout)
		wantJSONError(t, a)
		// edge gave up on the cell: the cell sees its request canceled.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec, err := cell.Wait(ctx, func(r cellsim.Record) bool { return r.Route == cellsim.RouteVerify })
		if err != nil {
			t.Fatalf("the cell never saw the request: %v", err)
		}
		if !rec.Canceled {
			t.Errorf("the cell's request was not canceled when edge gave up: %s", rec)
		}
	})
}

// TestClientGoesAway: a runner that disconnects mid-request cancels the request to the cell.
func TestClientGoesAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{longPoll: 30 * time.Second})
	cell := e.cell(2)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	jobPoll := runner1711().requestJob(runnerToken(t, 2), cell.QueueValue())
	e.noteTokens(jobPoll)
	go func() {
		_, err := trySend(ctx, e.client, e.edge.PublicURL, jobPoll)
		errc <- err
	}()
	poll.Until(t, 10*time.Second, "the job request held at cell 2", func() bool { return cell.Held() == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Errorf("canceled request: got an answer, want an error")
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	rec, err := cell.Wait(wctx, func(r cellsim.Record) bool { return r.Route == cellsim.RouteJobRequest })
	if err != nil {
		t.Fatalf("the cell still holds the request 10s after the client left: %v", err)
	}
	if !rec.Canceled {
		t.Errorf("the cell's request was not canceled: %s", rec)
	}

	// The same with the connection cut mid-upload: the cell must not wait for bytes forever.
	id, err := cell.AddJob()
	if err != nil {
		t.Fatalf("AddJob: %v", err)
	}
	j, _ := cell.Job(id)
	e.noteTokens(outgoing{header: http.Header{"Job-Token": {j.Token}}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.edge.PublicURL, "http://"))
	if err != nil {
		t.Fatalf("dial edge: %v", err)
	}
	req := "POST /api/v4/jobs/" + strconv.FormatUint(id, 10) + "/artifacts HTTP/1.1\r\nHost: edge\r\nJob-Token: " + j.Token +
		"\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 10000000\r\n\r\n--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.zip\"\r\n\r\n" +
		strings.Repeat("z", 100_000)
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatalf("write: %v", err)
	}
	poll.Until(t, 10*time.Second, "the upload to reach the cell", func() bool { return cell.InFlight() == 1 })
	conn.Close()
	rec, err = cell.Wait(wctx, func(r cellsim.Record) bool { return r.Route == cellsim.RouteUploadArtifacts })
	if err != nil {
		t.Fatalf("the cell still waits for the upload after the client left: %v", err)
	}
	if rec.BodyErr == "" || rec.Status == http.StatusCreated {
		t.Errorf("a cut upload was accepted: %s", rec)
	}
}
