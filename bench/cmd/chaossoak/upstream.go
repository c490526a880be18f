package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"gitlab.com/edge/edge/bench"
)

// UpstreamHeader names the agent whose upstream answered: an answer without it was made by edge
// (or the agent).
const UpstreamHeader = "Soak-Upstream"

// upstream is the small HTTP service one agent serves, in the soak's own process (it is never
// faulted): 200 with how many body bytes it read, and it counts each request id it saw.
type upstream struct {
	agent string
	port  int
	srv   *http.Server

	mu       sync.Mutex
	seen     map[string]int
	arrivals map[string][]time.Time // of the ids seen more than once
	first    map[string]time.Time
}

func startUpstream(agent string) (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("upstream for %s: %w", agent, err)
	}
	u := &upstream{agent: agent, port: ln.Addr().(*net.TCPAddr).Port, seen: map[string]int{},
		arrivals: map[string][]time.Time{}, first: map[string]time.Time{}}
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := u.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("upstream:", err)
		}
	}()
	return u, nil
}

type upstreamAnswer struct {
	Agent string `json:"agent"`
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	if id := r.Header.Get(bench.RequestIDHeader); id != "" {
		now := time.Now()
		u.mu.Lock()
		u.seen[id]++
		if u.seen[id] == 1 {
			u.first[id] = now
		} else {
			if len(u.arrivals[id]) == 0 {
				u.arrivals[id] = []time.Time{u.first[id]}
			}
			u.arrivals[id] = append(u.arrivals[id], now)
		}
		u.mu.Unlock()
	}
	w.Header().Set(UpstreamHeader, u.agent)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(upstreamAnswer{Agent: u.agent, Path: r.URL.Path, Bytes: n})
}

// duplicates are the request ids the upstream saw more than once, with when it saw each.
func (u *upstream) duplicates() map[string][]time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string][]time.Time{}
	for id, at := range u.arrivals {
		out[id] = append([]time.Time(nil), at...)
	}
	return out
}
