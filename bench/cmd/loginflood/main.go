// Command loginflood is the login-state bench of issue 14: it sends N unauthenticated requests
// (default 100,000) with long paths (default 30 KiB) to a workspace host of one edge, spread over
// many loopback client addresses, and reports edge's memory and requests per second at the
// start and at the end, then what one more address gets once the store is full. Every request
// makes edge start a login, which is what an attacker without a session can make it keep.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
)

type options struct {
	n, pathBytes, addresses, conns int
	edgeBin, results               string
}

func main() {
	var o options
	fs := flag.NewFlagSet("loginflood", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 100_000, "unauthenticated requests")
	fs.IntVar(&o.pathBytes, "path-bytes", 30<<10, "length of each request's path")
	fs.IntVar(&o.addresses, "addresses", 1000, "loopback client addresses the requests come from (127.1.x.y)")
	fs.IntVar(&o.conns, "c", 32, "concurrent connections")
	fs.StringVar(&o.edgeBin, "edge-bin", "", "use this edge binary instead of building ./cmd/edge")
	fs.StringVar(&o.results, "results", "", "also write loginflood.md into this directory")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "loginflood:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "loginflood-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.edgeBin == "" {
		if o.edgeBin, err = bench.GoBuild(ctx, dir, "./cmd/edge", "edge"); err != nil {
			return err
		}
	}
	public, err := bench.FreeAddr("127.0.0.1")
	if err != nil {
		return err
	}
	ops, err := bench.FreeAddr("127.0.0.1")
	if err != nil {
		return err
	}
	conf, err := writeConfig(dir, public, ops)
	if err != nil {
		return err
	}
	sup := &bench.Supervisor{Dir: dir, Name: "loginflood"}
	defer sup.StopAll()
	edge, err := sup.Start("edge", []string{o.edgeBin, "serve", "--config", conf}, bench.StartOptions{})
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: time.Second}
	if err := edge.WaitReady(ctx, 20*time.Second, func() (bool, error) {
		resp, err := client.Get("http://" + ops + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		return fmt.Errorf("edge: %w", err)
	}
	_, port, _ := net.SplitHostPort(public)
	f := &flood{o: o, target: "http://" + public + "/" + strings.Repeat("p", o.pathBytes-1), host: "8080-ws." + domain + ":" + port, pid: edge.PID()}
	report, err := f.run(ctx)
	if err != nil {
		return err
	}
	fmt.Print(report)
	if o.results != "" {
		return bench.WriteResults(o.results, "loginflood", nil, report)
	}
	return nil
}

const domain = "ws.localhost"

func writeConfig(dir, public, ops string) (string, error) {
	files := map[string]string{
		"secret":     "bench-oidc-client-secret",
		"session":    strings.Repeat("s", 40),
		"authz.yaml": "workspaces:\n  - {name: ws, agent_id: a1, users: [alice]}\n",
		"edge.yaml": fmt.Sprintf(`listen: {public: %q, ops: %q}
cells: [{id: 1, url: "http://127.0.0.1:9", legacy: true}]
log: {level: warn, access: false}
workspaces:
  domain: %s
  insecure_http: true
  oidc: {issuer: "http://127.0.0.1:9", client_id: edge, client_secret_file: %q, redirect_url: "http://auth.%s:%s/oauth/callback"}
  authorizer: {file: %q}
  session: {key_file: %q}
`, public, ops, domain, filepath.Join(dir, "secret"), domain, public[strings.LastIndexByte(public, ':')+1:], filepath.Join(dir, "authz.yaml"), filepath.Join(dir, "session")),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "edge.yaml"), nil
}

// flood sends the requests and keeps, at each tenth, edge's RSS and the time.
type flood struct {
	o            options
	target, host string
	pid          int
	done         atomic.Int64
	mu           sync.Mutex
	marks        []mark
	status       map[int]int
}

type mark struct {
	at   time.Time
	done int64
	rss  int64
}

func (f *flood) mark() {
	st, _ := bench.ReadProcStatus("/proc", f.pid)
	f.mu.Lock()
	f.marks = append(f.marks, mark{at: time.Now(), done: f.done.Load(), rss: st.RSS})
	f.mu.Unlock()
}

func (f *flood) run(ctx context.Context) (string, error) {
	f.status = map[int]int{}
	f.mark()
	perAddr := (f.o.n + f.o.addresses - 1) / f.o.addresses
	next := atomic.Int64{}
	tenth := int64(f.o.n / 10)
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for range f.o.conns {
		wg.Go(func() {
			for {
				a := next.Add(1) - 1
				if a >= int64(f.o.addresses) || ctx.Err() != nil {
					return
				}
				left := min(perAddr, f.o.n-int(a)*perAddr)
				if err := f.send(ctx, clientAddr(1, int(a)), left, func() {
					if d := f.done.Add(1); d%tenth == 0 {
						f.mark()
					}
				}); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return "", firstErr
	}
	full := map[int]int{}
	f.status, full = full, f.status
	if err := f.send(ctx, clientAddr(2, 0), 200, func() {}); err != nil {
		return "", err
	}
	return f.report(full), nil
}

// clientAddr is the a-th loopback address of block b: 127.b.x.y.
func clientAddr(b, a int) string {
	return fmt.Sprintf("127.%d.%d.%d", b, a/250, a%250+1)
}

// send makes n requests from the local address addr on one kept-alive connection.
func (f *flood) send(ctx context.Context, addr string, n int, each func()) error {
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}).DialContext, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range n {
		req, err := http.NewRequestWithContext(ctx, "GET", f.target, nil)
		if err != nil {
			return err
		}
		req.Host = f.host
		resp, err := c.Do(req)
		if err != nil {
			return fmt.Errorf("from %s: %w", addr, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		f.mu.Lock()
		f.status[resp.StatusCode]++
		f.mu.Unlock()
		each()
	}
	return nil
}

func (f *flood) report(full map[int]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# loginflood: %d unauthenticated requests, %d-byte paths, %d client addresses, %d connections\n\n",
		f.o.n, f.o.pathBytes, f.o.addresses, f.o.conns)
	b.WriteString("| requests done | edge RSS | req/s over the last tenth |\n|---:|---:|---:|\n")
	for i, m := range f.marks {
		rate := "-"
		if i > 0 {
			p := f.marks[i-1]
			rate = fmt.Sprintf("%.0f", float64(m.done-p.done)/m.at.Sub(p.at).Seconds())
		}
		fmt.Fprintf(&b, "| %d | %.0f MiB | %s |\n", m.done, float64(m.rss)/(1<<20), rate)
	}
	fmt.Fprintf(&b, "\nAnswers: %s; then 200 more from a new address: %s\n", statuses(full), statuses(f.status))
	return b.String()
}

func statuses(m map[int]int) string {
	var parts []string
	for _, code := range []int{http.StatusFound, http.StatusTooManyRequests} {
		parts = append(parts, fmt.Sprintf("%d x %d", m[code], code))
		delete(m, code)
	}
	for code, n := range m {
		parts = append(parts, fmt.Sprintf("%d x %d", n, code))
	}
	return strings.Join(parts, ", ")
}
