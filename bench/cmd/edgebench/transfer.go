package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"gitlab.com/edge/edge/bench"
)

// transferSize is the size of each download and upload of the transfer case.
const transferSize = 10 * bench.MiB

// transferHeaders is the file the transfer client reads the tunnel paths' Authorization header
// from, so the token is not on a command line.
const transferHeaders = "transfer-headers"

func (h *harness) writeTransferHeaders() error {
	line := "Authorization: Bearer " + h.tokens.api + "\n"
	if err := os.WriteFile(h.path(transferHeaders), []byte(line), 0o600); err != nil {
		return fmt.Errorf("write transfer headers: %w", err)
	}
	return nil
}

// transferBatch runs the transfer client (this program, pinned to the client CPU like wrk) for
// opts.transfers sequential transfers of one direction over one path, after one unmeasured
// transfer, and the CPU the processes on the path spent meanwhile.
func (h *harness) transferBatch(ctx context.Context, path, direction string, round int) (bench.TransferBatch, error) {
	b := bench.TransferBatch{Path: path, Direction: direction, Round: round}
	c := transferCase(path, direction, transferSize, h.tokens)
	self, err := os.Executable()
	if err != nil {
		return b, fmt.Errorf("transfer client: %w", err)
	}
	args := []string{self, transferClientCmd, "--url", h.url(c), "--method", c.method,
		"--bytes", strconv.Itoa(transferSize), "--count", strconv.Itoa(h.opts.transfers), "--warmup", "1"}
	if len(c.headers) > 0 {
		args = append(args, "--header-file", h.path(transferHeaders))
	}
	procs := h.pathProcs(c)
	ps := append(procs, part{"upstream", h.upstream})
	before, err := cpuOf(ps)
	if err != nil {
		return b, err
	}
	argv := h.pinned(h.opts.clientCPU, args...)
	cmd := bench.ToolCommand(ctx, argv)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return b, ctx.Err()
	}
	if err != nil {
		return b, fmt.Errorf("transfer %s %s: %w\n%s", direction, path, err, strings.TrimSpace(stderr.String()))
	}
	after, err := cpuOf(ps)
	if err != nil {
		return b, err
	}
	if b.Samples, err = bench.ParseTransferOutput(string(out)); err != nil {
		return b, fmt.Errorf("transfer %s %s: %w", direction, path, err)
	}
	b.HasProxy = len(procs) > 0
	b.ProxyCPU, _, b.Parts = spent(ps, before, after)
	return b, failed(ps)
}
