package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// report prints the table and the goal line, Markdown, to w.
func report(w io.Writer, o options, notes []string, res results) {
	sizeMiB, rounds, up, down, lat := o.sizeMiB, o.rounds, res.up, res.down, res.lat
	stat := func(ts []transfer, f func(transfer) float64) (med, min float64) {
		v := make([]float64, len(ts))
		for i, t := range ts {
			v[i] = f(t)
		}
		return bench.Median(v), slices.Min(v)
	}
	data := func(t transfer) float64 { return t.dataMBps }
	whole := func(t transfer) float64 { return t.mbps }
	gib := float64(int64(sizeMiB)<<20) / (1 << 30)
	perGiB := func(ts []transfer, f func(transfer) time.Duration) float64 {
		med, _ := stat(ts, func(t transfer) float64 { return f(t).Seconds() / gib })
		return med
	}
	ratios := map[string]float64{}
	fmt.Fprintf(w, "| case | direct to sshd | through edge | through edge vs direct |\n|---|---|---|---|\n")
	for _, c := range []struct {
		name string
		ts   [][]transfer
	}{{"upload", up}, {"download", down}} {
		d, dmin := stat(c.ts[0], data)
		e, emin := stat(c.ts[1], data)
		ratios[c.name] = e / d
		fmt.Fprintf(w, "| scp %s %d MiB: MB/s in the data phase (slowest) | %.0f (%.0f) | %.0f (%.0f) | **%.2fx** |\n", c.name, sizeMiB, d, dmin, e, emin, e/d)
		d, _ = stat(c.ts[0], whole)
		e, _ = stat(c.ts[1], whole)
		fmt.Fprintf(w, "| scp %s: MB/s over the whole scp, login included | %.0f | %.0f | %.2fx |\n", c.name, d, e, e/d)
		total := func(t transfer) time.Duration { return t.cpu[0] + t.cpu[1] + t.cpu[2] + t.cpu[3] }
		fmt.Fprintf(w, "| scp %s: CPU s per GiB, all processes | %.2f | %.2f | %.2fx |\n", c.name,
			perGiB(c.ts[0], total), perGiB(c.ts[1], total), perGiB(c.ts[1], total)/perGiB(c.ts[0], total))
		for k, part := range cpuParts() {
			f := func(t transfer) time.Duration { return t.cpu[k] }
			dc := fmt.Sprintf("%.2f", perGiB(c.ts[0], f))
			if k >= 2 {
				dc = ""
			}
			fmt.Fprintf(w, "| scp %s: CPU s per GiB, %s | %s | %.2f | |\n", c.name, part, dc, perGiB(c.ts[1], f))
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
	latCell := func(v []time.Duration) string {
		return fmt.Sprintf("%s (%s-%s)", ms(bench.MedianDuration(v)), ms(slices.Min(v)), ms(slices.Max(v)))
	}
	d, e, dx := bench.MedianDuration(lat[0]), bench.MedianDuration(lat[1]), bench.MedianDuration(lat[2])
	fmt.Fprintf(w, "| `ssh ... true`: median wall (fastest-slowest) | %s | %s | %+.1f ms |\n", latCell(lat[0]), latCell(lat[1]), float64(e-d)/1e6)
	fmt.Fprintf(w, "| `ssh ... true`: direct with edge's key exchange (curve25519-sha256) | %s | | %+.1f ms |\n", latCell(lat[2]), float64(e-dx)/1e6)
	met := func(r float64) string {
		if r >= 0.5 {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(w, "\nscp through edge / direct, data phase: upload %.2fx (goal >= 0.5x: %s), download %.2fx (%s). `ssh true` through edge: %+.1f ms against direct with OpenSSH's default key exchange, %+.1f ms against direct with curve25519-sha256 (medians of %d runs each).\n",
		ratios["upload"], met(ratios["upload"]), ratios["download"], met(ratios["download"]), float64(e-d)/1e6, float64(e-dx)/1e6, len(lat[0]))
	fmt.Fprintf(w, "%d rounds, interleaved (the order of the paths alternating); scp of %d MiB of random bytes each way per round; %d `ssh true` each way per round, the order rotating. MB/s are 10^6 bytes/s, medians over the rounds.\n",
		rounds, sizeMiB, o.n)
	for _, note := range notes {
		fmt.Fprintln(w, note+".")
	}
}

// negotiated is the cipher, MAC and key exchange ssh -v reports.
func negotiated(stderr string) string {
	var kex, cipher string
	for _, line := range strings.Split(stderr, "\n") {
		if _, s, ok := strings.Cut(line, "debug1: kex: algorithm: "); ok {
			kex = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "[preauth]"))
		}
		if _, s, ok := strings.Cut(line, "debug1: kex: server->client cipher: "); ok {
			cipher = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "[preauth]"))
		}
	}
	if cipher == "" {
		return "(not seen in ssh -v)"
	}
	return cipher + ", kex " + kex
}
