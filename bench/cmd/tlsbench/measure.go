package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gitlab.com/edge/edge/bench"
)

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
		res, err := bench.RunWrk(ctx, o.client(o.wrk, "-t1", fmt.Sprintf("-c%d", o.conns), fmt.Sprintf("-d%ds", secs), "--latency", url))
		if err != nil {
			return s, err
		}
		if err := res.Clean(); err != nil {
			return s, err
		}
		s.rps, s.p50, s.p99, requests = res.RequestsPerS, res.P50(), res.P99(), res.Requests
	case "h2":
		logFile := filepath.Join(o.dir, "h2load.tsv")
		defer os.Remove(logFile)
		res, err := bench.RunH2load(ctx, o.client(o.h2load, "-c", strconv.Itoa(o.h2Clients), "-m", strconv.Itoa(o.h2Streams),
			"-D", strconv.Itoa(secs), "--log-file", logFile, url))
		if err != nil {
			return s, err
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
		s.p50, s.p99, _, err = bench.H2loadLatencyLog(f)
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
