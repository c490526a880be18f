package front

import (
	"net/http"
	"sync"
	"time"

	"gitlab.com/edge/edge/hop"
)

// refusalsKept is how many of the latest refusals the status page shows.
const refusalsKept = 100

// Refusal is one request edge answered with an error of its own: what the status page lists. It
// holds the path without its query, and never a header: no token, cookie or secret.
type Refusal struct {
	Time      time.Time `json:"time"`
	Route     string    `json:"route"`
	Method    string    `json:"method"`
	Host      string    `json:"host"`
	Path      string    `json:"path"`
	Status    int       `json:"status"`
	Cause     string    `json:"cause"`
	RequestID string    `json:"request_id"`
}

// refusals is a ring of the latest refusals.
type refusals struct {
	mu   sync.Mutex
	ring [refusalsKept]Refusal
	n    int
}

func (rs *refusals) add(w *hop.Record, r *http.Request) {
	status := w.StatusOrClosed()
	path := r.URL.Path
	if len(path) > 256 {
		path = path[:256] + "…"
	}
	host := r.Host
	if len(host) > 256 {
		host = host[:256] + "…"
	}
	f := Refusal{Time: time.Now().UTC(), Route: w.Route, Method: r.Method, Host: host, Path: path,
		Status: status, Cause: w.Cause, RequestID: w.ID[0]}
	rs.mu.Lock()
	rs.ring[rs.n%refusalsKept] = f
	rs.n++
	rs.mu.Unlock()
}

// Refusals are the latest refusals of both listeners, newest first.
func (f *Front) Refusals() []Refusal {
	rs := &f.refusals
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := min(rs.n, refusalsKept)
	out := make([]Refusal, 0, n)
	for i := range n {
		out = append(out, rs.ring[(rs.n-1-i)%refusalsKept])
	}
	return out
}
