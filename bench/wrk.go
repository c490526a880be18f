// Package bench holds the pieces of the side-by-side benchmark harness (cmd/edgebench) that can be
// tested without starting anything: parsing wrk and /proc output, medians, the result table, and
// the configs and scripts the harness writes.
package bench

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// WrkResult is what the harness reads from one `wrk --latency` run.
type WrkResult struct {
	Requests     int64
	Elapsed      time.Duration
	RequestsPerS float64
	Percentiles  map[int]time.Duration // 50, 75, 90, 99
	SocketErrors int64                 // connect + read + write + timeout
	Non2xx3xx    int64
	LatencyAvg   time.Duration
	LatencyMax   time.Duration
}

// P50 and P99 are the two percentiles the table shows.
func (r WrkResult) P50() time.Duration { return r.Percentiles[50] }
func (r WrkResult) P99() time.Duration { return r.Percentiles[99] }

// ParseWrk reads wrk's human output (run with --latency). Lines it does not know are skipped, so
// a script's own output does not break it; the lines the table needs must be there.
func ParseWrk(out string) (WrkResult, error) {
	res := WrkResult{Percentiles: map[int]time.Duration{}}
	sawRequests, sawRate := false, false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == "Latency" && len(fields) >= 4:
			avg, err := ParseWrkDuration(fields[1])
			if err != nil {
				return res, fmt.Errorf("latency avg: %w", err)
			}
			max, err := ParseWrkDuration(fields[3])
			if err != nil {
				return res, fmt.Errorf("latency max: %w", err)
			}
			res.LatencyAvg, res.LatencyMax = avg, max
		case len(fields) == 2 && strings.HasSuffix(fields[0], "%"):
			p, err := strconv.ParseFloat(strings.TrimSuffix(fields[0], "%"), 64)
			if err != nil {
				continue
			}
			d, err := ParseWrkDuration(fields[1])
			if err != nil {
				return res, fmt.Errorf("percentile %s: %w", fields[0], err)
			}
			res.Percentiles[int(p)] = d
		case len(fields) >= 4 && fields[1] == "requests" && fields[2] == "in":
			n, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return res, fmt.Errorf("request count %q: %w", fields[0], err)
			}
			el, err := ParseWrkDuration(strings.TrimSuffix(fields[3], ","))
			if err != nil {
				return res, fmt.Errorf("elapsed: %w", err)
			}
			res.Requests, res.Elapsed, sawRequests = n, el, true
		case strings.HasPrefix(line, "Requests/sec:") && len(fields) == 2:
			v, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return res, fmt.Errorf("requests/sec %q: %w", fields[1], err)
			}
			res.RequestsPerS, sawRate = v, true
		case strings.HasPrefix(line, "Socket errors:"):
			n, err := sumSocketErrors(strings.TrimPrefix(line, "Socket errors:"))
			if err != nil {
				return res, err
			}
			res.SocketErrors = n
		case strings.HasPrefix(line, "Non-2xx or 3xx responses:"):
			last := fields[len(fields)-1]
			n, err := strconv.ParseInt(last, 10, 64)
			if err != nil {
				return res, fmt.Errorf("non-2xx count %q: %w", last, err)
			}
			res.Non2xx3xx = n
		}
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("read wrk output: %w", err)
	}
	switch {
	case !sawRequests:
		return res, fmt.Errorf("no %q line in wrk output", "N requests in T")
	case !sawRate:
		return res, fmt.Errorf("no Requests/sec line in wrk output")
	case res.Percentiles[50] == 0 || res.Percentiles[99] == 0:
		return res, fmt.Errorf("no latency distribution in wrk output (run wrk with --latency)")
	}
	return res, nil
}

// sumSocketErrors reads " connect 0, read 1, write 0, timeout 2".
func sumSocketErrors(s string) (int64, error) {
	var total int64
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(part)
		if len(f) != 2 {
			return 0, fmt.Errorf("socket errors: bad part %q", part)
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("socket errors %q: %w", part, err)
		}
		total += n
	}
	return total, nil
}

// ParseWrkDuration reads wrk's time format: a decimal number followed by us, ms, s, m or h.
func ParseWrkDuration(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("bad wrk duration %q", s)
		}
		return time.Duration(v * float64(u.unit)), nil
	}
	return 0, fmt.Errorf("bad wrk duration %q: unknown unit", s)
}

// RunWrk runs wrk's argv (which must ask for --latency) and reads its output.
func RunWrk(ctx context.Context, argv []string) (WrkResult, error) {
	out, err := RunTool(ctx, argv)
	if err != nil {
		return WrkResult{}, err
	}
	res, err := ParseWrk(out)
	if err != nil {
		return res, fmt.Errorf("wrk output: %w\n%s", err, out)
	}
	return res, nil
}

// Clean is an error when any request failed: a rate of errors measures nothing.
func (r WrkResult) Clean() error {
	if r.Non2xx3xx > 0 || r.SocketErrors > 0 {
		return fmt.Errorf("wrk saw %d non-2xx answers and %d socket errors", r.Non2xx3xx, r.SocketErrors)
	}
	return nil
}
