package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// row is the medians of one case over the rounds.
type row struct {
	proto, target string
	rps           float64
	p50, p99, cpu time.Duration
	upCPU         time.Duration
	spread        float64 // (max-min)/median of req/s
	n             int
}

func summarize(samples []sample) row {
	var r row
	var rps []float64
	var p50, p99, cpu, upCPU []time.Duration
	for _, s := range samples {
		rps = append(rps, s.rps)
		p50, p99, cpu = append(p50, s.p50), append(p99, s.p99), append(cpu, s.cpuPerReq)
		upCPU = append(upCPU, s.upCPUPerReq)
	}
	r.upCPU = bench.MedianDuration(upCPU)
	r.n = len(samples)
	r.rps = bench.Median(rps)
	r.p50, r.p99, r.cpu = bench.MedianDuration(p50), bench.MedianDuration(p99), bench.MedianDuration(cpu)
	if r.n > 0 && r.rps > 0 {
		lo, hi := rps[0], rps[0]
		for _, v := range rps {
			lo, hi = min(lo, v), max(hi, v)
		}
		r.spread = (hi - lo) / r.rps
	}
	return r
}

func ratio(a, b float64) string {
	if v, ok := bench.Ratio(a, b); ok {
		return fmt.Sprintf("%.2fx", v)
	}
	return "-"
}

// report prints the Markdown table, one block of rows per protocol, every edge row compared with
// nginx's, then how it was measured.
func report(w io.Writer, o *options, targets []*target, results map[string][]sample) {
	fmt.Fprintln(w, "| case | req/s | p50 | p99 | server CPU/req | upstream CPU/req | req/s vs nginx | p50 vs nginx | CPU/req vs nginx |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	var noisy []string
	rows := map[string]row{} // protocol id + " " + target id
	for _, p := range o.protocols() {
		ngx := summarize(results[p.id+" nginx"])
		for _, t := range targets {
			if t.urls[p.id] == "" {
				continue
			}
			r := summarize(results[p.id+" "+t.id])
			rows[p.id+" "+t.id] = r
			vs := []string{"", "", ""}
			if t.id != "nginx" {
				vs = []string{ratio(r.rps, ngx.rps), ratio(float64(r.p50), float64(ngx.p50)), ratio(float64(r.cpu), float64(ngx.cpu))}
			}
			fmt.Fprintf(w, "| %s, %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", p.label, t.label, r.rps,
				bench.FormatDuration(r.p50), bench.FormatDuration(r.p99), bench.FormatDuration(r.cpu), bench.FormatDuration(r.upCPU),
				vs[0], vs[1], vs[2])
			if r.spread > 0.2 {
				noisy = append(noisy, fmt.Sprintf("%s %s (%.0f%%)", p.label, t.label, 100*r.spread))
			}
		}
	}
	fmt.Fprintln(w)
	warm := "no warm-up run"
	if o.warmup >= time.Second {
		warm = fmt.Sprintf("after a %ds warm-up run each", int(o.warmup.Seconds()))
	}
	fmt.Fprintf(w, "Medians of %d round(s) of %ds per case, interleaved (order rotated each round), %s.\n",
		o.rounds, int(o.duration.Seconds()), warm)
	fmt.Fprintf(w, "HTTP/1.1: wrk -t1 -c%d --latency (wrk negotiates no ALPN: HTTP/1.1 over TLS, keep-alive). "+
		"HTTP/2: h2load -t1 -c%d -m%d (%d streams), p50/p99 from its per-request log.\n",
		o.conns, o.h2Clients, o.h2Streams, o.h2Clients*o.h2Streams)
	if o.pin.On {
		fmt.Fprintf(w, "Servers (upstream, edge, nginx) pinned to CPU %d, wrk and h2load to CPU %d (taskset); edge's GOMAXPROCS follows (1), nginx runs 1 worker.\n",
			o.serverCPU, o.clientCPU)
	} else {
		fmt.Fprintf(w, "Not pinned (%d CPUs): servers and load generators share the CPUs.\n", runtime.NumCPU())
	}
	var ciphers []string
	for _, t := range targets {
		if t.cipher != "" {
			ciphers = append(ciphers, fmt.Sprintf("%s: %s", t.label, t.cipher))
		}
	}
	fmt.Fprintf(w, "Negotiated (OpenSSL client): %s.\n", strings.Join(ciphers, "; "))
	fmt.Fprintln(w, "server CPU/req: utime+stime of the server's processes (edge; nginx master and worker) over the run, per completed request; upstream CPU/req: the same for the upstream (the servers' CPU runs both).")
	if o.plain {
		// What TLS adds to each server's CPU per request, over its plain HTTP/1.1.
		ep, np := rows["plain edge-plain"], rows["plain nginx"]
		var parts []string
		for _, p := range []protocol{{"h1", "HTTP/1.1"}, {"h2", "HTTP/2"}} {
			e, n := rows[p.id+" edge"], rows[p.id+" nginx"]
			parts = append(parts, fmt.Sprintf("%s over TLS: edge +%s, nginx +%s", p.label,
				bench.FormatDuration(e.cpu-ep.cpu), bench.FormatDuration(n.cpu-np.cpu)))
		}
		fmt.Fprintf(w, "Server CPU/req added over plain HTTP/1.1 (edge %s, nginx %s; plain req/s edge/nginx %s): %s.\n",
			bench.FormatDuration(ep.cpu), bench.FormatDuration(np.cpu), ratio(ep.rps, np.rps), strings.Join(parts, "; "))
	}
	if len(noisy) > 0 {
		fmt.Fprintf(w, "\nWarning: req/s varied by more than 20%% over the rounds for %s: something else used the CPUs; compare CPU/req rather than req/s.\n",
			strings.Join(noisy, ", "))
	}
}
