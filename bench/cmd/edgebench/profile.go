package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"gitlab.com/edge/edge/bench"
)

// profile samples the proxy of one case with perf during one more load run, then prints the top
// of a flat report. edge serves no pprof, and perf sees nginx and edge the same way.
func (h *harness) profile(ctx context.Context, cases []benchCase, scripts map[string]string) error {
	if h.tools.perf == "" {
		logf("perf not found (apt-get install linux-perf): no profile")
		return nil
	}
	var c benchCase
	for _, x := range cases {
		if x.id == h.opts.profileCase {
			c = x
		}
	}
	proxy := h.proxy(c)
	secs := max(1, int(h.opts.duration.Seconds()+0.5))
	argv := h.pinned(h.opts.clientCPU, h.tools.perf, "record", "-q", "-F", "999", "-g",
		"-o", h.opts.profileOut, "-p", strconv.Itoa(proxy.PID()), "--", "sleep", strconv.Itoa(secs))
	perf := bench.ToolCommand(ctx, argv)
	perfLog, err := os.Create(h.dir + "/perf-record.log")
	if err != nil {
		return err
	}
	defer perfLog.Close()
	perf.Stdout, perf.Stderr = perfLog, perfLog
	if err := perf.Start(); err != nil {
		return fmt.Errorf("start perf: %w", err)
	}
	res, wrkErr := h.wrk(ctx, c, scripts[c.id], h.opts.duration)
	if err := perf.Wait(); err != nil {
		b, _ := os.ReadFile(perfLog.Name())
		return fmt.Errorf("perf record: %w\n%s", err, b)
	}
	if wrkErr != nil {
		return wrkErr
	}
	fmt.Fprintf(h.out, "\nperf profile of %s (%s), one more %ds run at %.0f req/s; data in %s\n",
		c.id, c.label, secs, res.RequestsPerS, h.opts.profileOut)
	views := []struct {
		title string
		args  []string
		lines int
	}{
		{"self time (flat)", []string{"--no-children", "-F", "overhead,dso,sym", "--percent-limit", "0.7"}, 25},
		{"with callees (cumulative)", []string{"--children", "--sort", "sym", "--percent-limit", "4"}, 45},
	}
	for _, v := range views {
		args := append([]string{"report", "-i", h.opts.profileOut, "--stdio", "-g", "none"}, v.args...)
		out, err := exec.CommandContext(ctx, h.tools.perf, args...).Output()
		if err != nil {
			return fmt.Errorf("perf report: %w", err)
		}
		fmt.Fprintf(h.out, "\n%s:\n", v.title)
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			fmt.Fprintln(h.out, strings.TrimRight(line, " "))
			if n++; n == v.lines {
				break
			}
		}
	}
	return nil
}
