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
	"os/signal"
	"runtime"
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
	h2load               string
	pin                  bench.Pinner
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
		if *t.dst = bench.FindTool(t.name); *t.dst == "" {
			missing = append(missing, t.pkg)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools; install them with ./scripts/deps.sh %s", strings.Join(missing, " "))
	}
	o.pin.Taskset = bench.FindTool("taskset")
	switch n := runtime.NumCPU(); {
	case o.noPin:
	case o.pin.Taskset == "":
		logf("taskset not found: not pinning (noisier numbers)")
	case n < 2 || o.serverCPU == o.clientCPU || max(o.serverCPU, o.clientCPU) >= n || min(o.serverCPU, o.clientCPU) < 0:
		logf("CPUs %d and %d are not two distinct CPUs of the %d usable: not pinning", o.serverCPU, o.clientCPU, n)
	default:
		o.pin.On = true
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
		logf("go build ./cmd/edge")
		if o.edgeBin, err = bench.GoBuild(ctx, dir, "./cmd/edge", "edge"); err != nil {
			return err
		}
	}

	// The upstream: this program again, in a process of its own on the servers' CPU.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	upPort, err := bench.FreePort()
	if err != nil {
		return err
	}
	up, err := sup.Start("upstream", o.server(self, "-serve-upstream", fmt.Sprintf("127.0.0.1:%d", upPort)), bench.StartOptions{})
	if err != nil {
		return err
	}
	if err := up.WaitHTTP(ctx, startTimeout, fmt.Sprintf("http://127.0.0.1:%d/", upPort)); err != nil {
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
func (o *options) server(argv ...string) []string { return o.pin.Pin(o.serverCPU, argv...) }
func (o *options) client(argv ...string) []string { return o.pin.Pin(o.clientCPU, argv...) }
