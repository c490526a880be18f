package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// edgeConfig is edge's config for the soak: the legacy cell and cell 2 on the cell process's
// two listeners (edge wants a distinct URL per cell), a long poll timeout above the hold, room
// for every connection, and no access log (a line per request would be the soak's biggest
// write, and is not what is measured).
func edgeConfig(public, ops, legacy, cell2 string, longPoll time.Duration, maxConns int) string {
	return fmt.Sprintf(`listen: {public: %q, ops: %q}
cells:
  - {id: 1, url: "http://%s", legacy: true}
  - {id: 2, url: "http://%s"}
routing: {long_poll_timeout: %q}
limits: {max_connections: %d}
log: {level: warn, access: false}
`, public, ops, legacy, cell2, longPoll.String(), maxConns)
}

const startTimeout = 20 * time.Second

// waitReady polls url until it answers 200, p exits, or startTimeout passes.
func waitReady(ctx context.Context, p *bench.Proc, url string) error {
	client := &http.Client{Timeout: time.Second}
	last := "no answer"
	err := p.WaitReady(ctx, startTimeout, func() (bool, error) {
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil && !p.Exited() {
		return fmt.Errorf("%w (last: %s)", err, last)
	}
	return err
}

// cellAddrs reads the listeners the cell process printed ("listening NAME ADDR"), once it
// printed "ready".
func cellAddrs(ctx context.Context, p *bench.Proc) (map[string]string, error) {
	addrs := map[string]string{}
	err := p.WaitReady(ctx, startTimeout, func() (bool, error) {
		f, err := os.Open(p.Out)
		if err != nil {
			return false, nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				name, addr, _ := strings.Cut(rest, " ")
				addrs[name] = addr
			}
			if sc.Text() == "ready" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	for _, name := range []string{"legacy", "cell2", "control"} {
		if addrs[name] == "" {
			return nil, fmt.Errorf("cell: no %s listener in its output", name)
		}
	}
	return addrs, nil
}
