// Command tlsbench measures requests per second over TLS, HTTP/1.1 keep-alive (wrk) and HTTP/2
// (h2load), through edge and through nginx terminating TLS with the same certificate (ECDSA
// P-256, made for the run) in front of the same 1 KiB upstream, side by side in interleaved
// rounds, and prints the medians as a Markdown table.
//
//	go run ./bench/cmd/tlsbench [-d 10s] [-rounds 3] [-c 64]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
)

type options struct {
	duration, warmup     time.Duration
	rounds, conns        int
	h2Clients, h2Streams int
	accessLog            bool
	plain                bool
	nginxClientCiphers   bool
	noPin                bool
	serverCPU, clientCPU int
	keep                 bool
	edgeBin, nginx, wrk  string
	h2load, taskset      string
	pinned               bool
	dir                  string
	upstream             *bench.Proc
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-serve-upstream" {
		if err := serveUpstream(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "upstream:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.DurationVar(&o.duration, "d", 10*time.Second, "duration of each measured run (whole seconds)")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "duration of the unmeasured warm-up run of each case (0: none)")
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved rounds of each case")
	flag.IntVar(&o.conns, "c", 64, "wrk connections (HTTP/1.1)")
	flag.IntVar(&o.h2Clients, "h2c", 16, "h2load connections (HTTP/2)")
	flag.IntVar(&o.h2Streams, "m", 4, "h2load concurrent streams per connection")
	flag.BoolVar(&o.accessLog, "access-log", true, "also measure edge with its access log on (log.level info, to a file)")
	flag.BoolVar(&o.plain, "plain", true, "also measure edge and nginx over plain HTTP/1.1 (no TLS), as a reference for what TLS costs each")
	flag.BoolVar(&o.nginxClientCiphers, "nginx-client-ciphers", false, "let nginx take the client's TLS 1.3 cipher order (AES-256-GCM) instead of AES-128-GCM first, as Go's server does")
	flag.BoolVar(&o.noPin, "no-pin", false, "do not pin servers and load generators to CPUs")
	flag.IntVar(&o.serverCPU, "server-cpu", 0, "CPU of the servers (upstream, edge, nginx)")
	flag.IntVar(&o.clientCPU, "client-cpu", 1, "CPU of wrk and h2load")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (configs, certificates, logs)")
	flag.StringVar(&o.edgeBin, "edge-bin", "", "a built edge (default: go build ./cmd/edge)")
	flag.Parse()
	if flag.NArg() > 0 || o.rounds < 1 || o.duration < time.Second || o.conns < 1 || o.h2Clients < 1 || o.h2Streams < 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, &o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlsbench:", err)
		if ctx.Err() != nil {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "tlsbench: "+format+"\n", args...) }

func findTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		if p := filepath.Join(dir, name); isExec(p) {
			return p
		}
	}
	return ""
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// target is one server under load.
type target struct {
	id, label string
	proc      *bench.Proc
	urls      map[string]string // protocol id: URL; a target is loaded only with the protocols it has a URL for
	cipher    string            // negotiated with h2load (an OpenSSL client, like wrk)
}

// sample is one measured run.
type sample struct {
	rps         float64
	p50, p99    time.Duration
	cpuPerReq   time.Duration // the server's
	upCPUPerReq time.Duration // the upstream's
}

type protocol struct{ id, label string }

// protocols are the loads, each a block of rows in the table.
func (o *options) protocols() []protocol {
	ps := []protocol{{"h1", "HTTP/1.1 keep-alive"}, {"h2", "HTTP/2"}}
	if o.plain {
		ps = append(ps, protocol{"plain", "plain HTTP/1.1 keep-alive (no TLS)"})
	}
	return ps
}

func run(ctx context.Context, o *options) error {
	var missing []string
	for _, t := range []struct {
		dst  *string
		name string
		pkg  string
	}{{&o.nginx, "nginx", "nginx=nginx-light"}, {&o.wrk, "wrk", "wrk=wrk"}, {&o.h2load, "h2load", "h2load=nghttp2-client"}} {
		if *t.dst = findTool(t.name); *t.dst == "" {
			missing = append(missing, t.pkg)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools; install them with ./scripts/deps.sh %s", strings.Join(missing, " "))
	}
	o.taskset = findTool("taskset")
	switch n := runtime.NumCPU(); {
	case o.noPin:
	case o.taskset == "":
		logf("taskset not found: not pinning (noisier numbers)")
	case n < 2 || o.serverCPU == o.clientCPU || max(o.serverCPU, o.clientCPU) >= n || min(o.serverCPU, o.clientCPU) < 0:
		logf("CPUs %d and %d are not two distinct CPUs of the %d usable: not pinning", o.serverCPU, o.clientCPU, n)
	default:
		o.pinned = true
	}

	dir, err := os.MkdirTemp("", "tlsbench-")
	if err != nil {
		return err
	}
	o.dir = dir
	if o.keep {
		logf("keeping %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	sup := &bench.Supervisor{Dir: dir, Name: "tlsbench"}
	defer sup.StopAll()

	certs, err := writeCerts(dir)
	if err != nil {
		return err
	}
	if o.edgeBin == "" {
		o.edgeBin = filepath.Join(dir, "edge")
		logf("go build ./cmd/edge")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", o.edgeBin, "./cmd/edge")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/edge: %v\n%s", err, out)
		}
	}

	// The upstream: this program again, in a process of its own on the servers' CPU.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	upPort, err := freePort()
	if err != nil {
		return err
	}
	up, err := sup.Start("upstream", o.server(self, "-serve-upstream", fmt.Sprintf("127.0.0.1:%d", upPort)), bench.StartOptions{})
	if err != nil {
		return err
	}
	if err := waitReady(ctx, up, func() error { return checkHTTP(fmt.Sprintf("http://127.0.0.1:%d/", upPort)) }); err != nil {
		return err
	}
	o.upstream = up

	type edgeCase struct {
		id, label   string
		tls, access bool
	}
	edgeCases := []edgeCase{{"edge", "edge", true, false}}
	if o.accessLog {
		edgeCases = append(edgeCases, edgeCase{"edge-log", "edge, access log on", true, true})
	}
	if o.plain {
		edgeCases = append(edgeCases, edgeCase{"edge-plain", "edge", false, false})
	}
	var targets []*target
	for _, e := range edgeCases {
		t, err := startEdge(ctx, sup, o, e.id, e.label, upPort, certs, e.tls, e.access)
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}
	ngx, err := startNginx(ctx, sup, o, upPort, certs)
	if err != nil {
		return err
	}
	targets = append(targets, ngx)

	results := map[string][]sample{} // protocol id + " " + target id
	for round := 0; round <= o.rounds; round++ {
		d := o.duration
		if round == 0 {
			if o.warmup < time.Second {
				continue
			}
			d = o.warmup
		}
		for _, p := range o.protocols() {
			for i := range targets {
				t := targets[(i+round)%len(targets)] // the order rotated each round
				if t.urls[p.id] == "" {
					continue
				}
				s, err := o.measure(ctx, t, p, d)
				if err != nil {
					return fmt.Errorf("%s %s: %w", p.label, t.label, err)
				}
				if round == 0 {
					logf("warm-up %s %s: %.0f req/s", p.label, t.label, s.rps)
					continue
				}
				logf("round %d/%d %s %s: %.0f req/s p50 %s", round, o.rounds, p.label, t.label, s.rps, bench.FormatDuration(s.p50))
				results[p.id+" "+t.id] = append(results[p.id+" "+t.id], s)
			}
		}
	}
	report(os.Stdout, o, targets, results)
	return nil
}

// server prefixes argv with taskset to the servers' CPU when pinning.
func (o *options) server(argv ...string) []string { return o.pin(o.serverCPU, argv) }
func (o *options) client(argv ...string) []string { return o.pin(o.clientCPU, argv) }

func (o *options) pin(cpu int, argv []string) []string {
	if !o.pinned {
		return argv
	}
	return append([]string{o.taskset, "-c", strconv.Itoa(cpu)}, argv...)
}

func startEdge(ctx context.Context, sup *bench.Supervisor, o *options, id, label string, upPort int, c certFiles, withTLS, access bool) (*target, error) {
	pub, err := freePort()
	if err != nil {
		return nil, err
	}
	ops, err := freePort()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(o.dir, id+".yaml")
	if err := os.WriteFile(conf, []byte(edgeConfig(pub, ops, upPort, c, withTLS, access)), 0o644); err != nil {
		return nil, err
	}
	p, err := sup.Start(id, o.server(o.edgeBin, "serve", "--config", conf), bench.StartOptions{})
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, func() error { return checkHTTP(fmt.Sprintf("http://127.0.0.1:%d/readyz", ops)) }); err != nil {
		return nil, err
	}
	t := &target{id: id, label: label, proc: p}
	if !withTLS {
		t.urls = map[string]string{"plain": fmt.Sprintf("http://127.0.0.1:%d/", pub)}
		if err := checkPlain(t.urls["plain"]); err != nil {
			return nil, fmt.Errorf("%s (plain HTTP): %w", label, err)
		}
		return t, nil
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/", pub)
	t.urls = map[string]string{"h1": url, "h2": url}
	if err := checkTLS(url, c.CA); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return t, nil
}

func startNginx(ctx context.Context, sup *bench.Supervisor, o *options, upPort int, c certFiles) (*target, error) {
	version, err := nginxVersion(o.nginx)
	if err != nil {
		return nil, err
	}
	prefix := filepath.Join(o.dir, "nginx")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	plainPort := 0
	if o.plain {
		if plainPort, err = freePort(); err != nil {
			return nil, err
		}
	}
	conf := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(prefix, port, plainPort, upPort, c, version, !o.nginxClientCiphers)), 0o644); err != nil {
		return nil, err
	}
	p, err := sup.Start("nginx", o.server(o.nginx, "-p", prefix, "-e", filepath.Join(prefix, "error.log"), "-c", conf, "-g", "daemon off;"), bench.StartOptions{})
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/", port)
	t := &target{id: "nginx", label: fmt.Sprintf("nginx %d.%d.%d", version[0], version[1], version[2]), proc: p,
		urls: map[string]string{"h1": url, "h2": url}}
	if err := waitReady(ctx, p, func() error { return checkTLS(url, c.CA) }); err != nil {
		return nil, fmt.Errorf("%w (error log: %s)", err, filepath.Join(prefix, "error.log"))
	}
	if plainPort != 0 {
		t.urls["plain"] = fmt.Sprintf("http://127.0.0.1:%d/", plainPort)
		if err := checkPlain(t.urls["plain"]); err != nil {
			return nil, fmt.Errorf("nginx (plain HTTP): %w", err)
		}
	}
	return t, nil
}

// measure runs one load (wrk for HTTP/1.1, h2load for HTTP/2) against t for d, and the CPU the
// server (its whole process tree) and the upstream spent per request meanwhile.
func (o *options) measure(ctx context.Context, t *target, p protocol, d time.Duration) (sample, error) {
	secs := int(d.Round(time.Second) / time.Second)
	before, err := bench.TreeCPU("/proc", t.proc.PID())
	if err != nil {
		return sample{}, err
	}
	upBefore, err := bench.TreeCPU("/proc", o.upstream.PID())
	if err != nil {
		return sample{}, err
	}
	var s sample
	var requests int64
	url := t.urls[p.id]
	switch p.id {
	case "h1", "plain":
		out, err := o.load(ctx, o.client(o.wrk, "-t1", fmt.Sprintf("-c%d", o.conns), fmt.Sprintf("-d%ds", secs), "--latency", url))
		if err != nil {
			return s, err
		}
		res, err := bench.ParseWrk(out)
		if err != nil {
			return s, fmt.Errorf("wrk output: %w\n%s", err, out)
		}
		if res.Non2xx3xx > 0 || res.SocketErrors > 0 {
			return s, fmt.Errorf("wrk saw %d non-2xx answers and %d socket errors", res.Non2xx3xx, res.SocketErrors)
		}
		s.rps, s.p50, s.p99, requests = res.RequestsPerS, res.P50(), res.P99(), res.Requests
	case "h2":
		logFile := filepath.Join(o.dir, "h2load.tsv")
		defer os.Remove(logFile)
		out, err := o.load(ctx, o.client(o.h2load, "-c", strconv.Itoa(o.h2Clients), "-m", strconv.Itoa(o.h2Streams),
			"-D", strconv.Itoa(secs), "--log-file", logFile, url))
		if err != nil {
			return s, err
		}
		res, err := parseH2load(out)
		if err != nil {
			return s, fmt.Errorf("%w\n%s", err, out)
		}
		if res.Protocol != "h2" {
			return s, fmt.Errorf("h2load negotiated %q, not h2", res.Protocol)
		}
		if res.Failed > 0 || res.Non2xx > 0 || res.Succeeded == 0 {
			return s, fmt.Errorf("h2load: %d succeeded, %d failed, %d non-2xx", res.Succeeded, res.Failed, res.Non2xx)
		}
		t.cipher = res.TLSVersion + " " + res.Cipher
		f, err := os.Open(logFile)
		if err != nil {
			return s, err
		}
		s.p50, s.p99, _, err = latencyLog(f)
		f.Close()
		if err != nil {
			return s, err
		}
		s.rps, requests = res.RequestsPerS, res.Succeeded
	}
	after, err := bench.TreeCPU("/proc", t.proc.PID())
	if err != nil {
		return s, err
	}
	upAfter, err := bench.TreeCPU("/proc", o.upstream.PID())
	if err != nil {
		return s, err
	}
	if t.proc.Exited() {
		return s, t.proc.Failure()
	}
	if requests > 0 {
		s.cpuPerReq = (after - before) / time.Duration(requests)
		s.upCPUPerReq = (upAfter - upBefore) / time.Duration(requests)
	}
	return s, nil
}

// load runs a load generator and returns its output.
func (o *options) load(ctx context.Context, argv []string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out), nil
}
