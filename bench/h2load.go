package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// H2loadResult is what a bench command reads from one h2load run.
type H2loadResult struct {
	RequestsPerS float64
	Succeeded    int64
	Failed       int64 // failed + errored + timeout
	Non2xx       int64 // 3xx, 4xx and 5xx
	Protocol     string
	TLSVersion   string
	Cipher       string
	MeanRequest  time.Duration // "time for request" mean
}

// ParseH2load reads h2load's output. The req/s line and the requests line must be there.
func ParseH2load(out string) (H2loadResult, error) {
	var r H2loadResult
	sawRate, sawRequests := false, false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, rest, ok := strings.Cut(line, ":")
		if strings.HasPrefix(line, "finished in ") {
			// finished in 5.00s, 12345.60 req/s, 13.20MB/s
			for _, part := range strings.Split(line, ",") {
				if v, ok := strings.CutSuffix(strings.TrimSpace(part), " req/s"); ok {
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						return r, fmt.Errorf("h2load rate %q: %w", line, err)
					}
					r.RequestsPerS, sawRate = f, true
				}
			}
			continue
		}
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		switch strings.TrimSpace(key) {
		case "Application protocol":
			r.Protocol = rest
		case "TLS Protocol":
			r.TLSVersion = rest
		case "Cipher":
			r.Cipher = rest
		case "requests":
			// requests: 100 total, 100 started, 100 done, 98 succeeded, 1 failed, 1 errored, 0 timeout
			counts, err := h2loadCounts(rest)
			if err != nil {
				return r, fmt.Errorf("h2load %q: %w", line, err)
			}
			r.Succeeded = counts["succeeded"]
			r.Failed = counts["failed"] + counts["errored"] + counts["timeout"]
			sawRequests = true
		case "status codes":
			counts, err := h2loadCounts(rest)
			if err != nil {
				return r, fmt.Errorf("h2load %q: %w", line, err)
			}
			r.Non2xx = counts["3xx"] + counts["4xx"] + counts["5xx"]
		case "time for request":
			// min max mean sd +/-sd
			if f := strings.Fields(rest); len(f) >= 3 {
				d, err := time.ParseDuration(f[2])
				if err != nil {
					return r, fmt.Errorf("h2load %q: %w", line, err)
				}
				r.MeanRequest = d
			}
		}
	}
	if !sawRate || !sawRequests {
		return r, fmt.Errorf("no req/s or requests line in h2load's output")
	}
	return r, nil
}

// h2loadCounts reads "100 total, 100 started, 0 failed" as name: count.
func h2loadCounts(s string) (map[string]int64, error) {
	m := map[string]int64{}
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(part)
		if len(f) != 2 {
			return nil, fmt.Errorf("count %q", part)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, err
		}
		m[f[1]] = n
	}
	return m, nil
}

// H2loadLatencyLog reads h2load's --log-file (start time in us, status, us until the end of the
// response; tab-separated) and gives the p50 and p99 of the responses with a status (a failed
// stream's status is -1).
func H2loadLatencyLog(r io.Reader) (p50, p99 time.Duration, n int, err error) {
	var us []int64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 3 {
			continue
		}
		if status, _ := strconv.Atoi(f[1]); status <= 0 {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("h2load log line %q: %w", sc.Text(), err)
		}
		us = append(us, v)
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, err
	}
	if len(us) == 0 {
		return 0, 0, 0, fmt.Errorf("h2load logged no completed request")
	}
	slices.Sort(us)
	at := func(q float64) time.Duration {
		i := int(q * float64(len(us)))
		if i >= len(us) {
			i = len(us) - 1
		}
		return time.Duration(us[i]) * time.Microsecond
	}
	return at(0.50), at(0.99), len(us), nil
}

// RunH2load runs h2load's argv and reads its output.
func RunH2load(ctx context.Context, argv []string) (H2loadResult, error) {
	out, err := RunTool(ctx, argv)
	if err != nil {
		return H2loadResult{}, err
	}
	res, err := ParseH2load(out)
	if err != nil {
		return res, fmt.Errorf("%w\n%s", err, out)
	}
	return res, nil
}
