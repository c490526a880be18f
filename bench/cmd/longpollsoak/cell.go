package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
)

// cellCommand is the hidden subcommand that runs the stand-in cell in a child process of its
// own, so that its descriptors, memory and CPU are not the client's or the soak's.
const cellCommand = "_cell"

// pollIDHeader carries each long poll's unique id from the client to the cell; edge passes it
// on unchanged, so an id the cell sees twice is a request sent twice.
const pollIDHeader = "Bench-Poll-Id"

// upstreamHeader names the cell listener that answered: an answer without it was made by edge.
const upstreamHeader = "Bench-Upstream"

// otherBody is the answer to every other runner request: small, like GitLab's.
const otherBody = `{"id":123,"status":"running"}` + "\n"

// cellStats is what GET /stats on the cell's control listener answers.
type cellStats struct {
	Held       int64 `json:"held"`        // job requests waiting now
	HeldMax    int64 `json:"held_max"`    // the most waiting at once
	Answered   int64 `json:"answered"`    // answered 204 after the release
	Canceled   int64 `json:"canceled"`    // edge gave up on them before the release
	PollsSeen  int   `json:"polls_seen"`  // distinct poll ids
	Retried    int   `json:"retried"`     // ids seen more than once
	NoID       int64 `json:"no_id"`       // job requests without a poll id
	WrongCell  int64 `json:"wrong_cell"`  // job requests that reached the legacy cell
	Other      int64 `json:"other"`       // other runner requests
	Released   bool  `json:"released"`    // POST /release happened
	ReleasedAt int64 `json:"released_at"` // unix ms
}

// cell holds every job request until released, and counts what it saw.
type cell struct {
	release     chan struct{}
	releaseOnce sync.Once
	releasedAt  atomic.Int64

	held, heldMax, answered, canceled, noID, wrongCell, other atomic.Int64

	mu    sync.Mutex
	polls map[string]int // poll id -> times seen
}

func newCell() *cell {
	return &cell{release: make(chan struct{}), polls: map[string]int{}}
}

// runCell serves the legacy cell, cell 2 and the control listener until SIGTERM.
func runCell(args []string) error {
	fs := flag.NewFlagSet(cellCommand, flag.ContinueOnError)
	legacy := fs.String("legacy", "127.0.0.2:0", "legacy cell listen address")
	cell2 := fs.String("cell2", "127.0.0.3:0", "cell 2 listen address")
	control := fs.String("control", "127.0.0.1:0", "control listener (GET /stats, POST /release)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	c := newCell()
	servers, err := bench.Serve(os.Stdout, []bench.Listener{
		{Name: "legacy", Addr: *legacy, Handler: c.handler("legacy")},
		{Name: "cell2", Addr: *cell2, Handler: c.handler("cell2")},
		{Name: "control", Addr: *control, Handler: c.controlHandler()},
	})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if err := servers.Wait(ctx); err != nil {
		return err
	}
	c.releaseAll()
	servers.Shutdown()
	return nil
}

func (c *cell) releaseAll() {
	c.releaseOnce.Do(func() {
		c.releasedAt.Store(time.Now().UnixMilli())
		close(c.release)
	})
}

// handler is one cell listener: POST /api/v4/jobs/request waits for the release and then
// answers 204 as GitLab does when there is no job; anything else gets 200 at once.
func (c *cell) handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set(upstreamHeader, name)
		if r.Method == http.MethodPost && r.URL.Path == "/api/v4/jobs/request" {
			c.hold(w, r, name)
			return
		}
		c.other.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, otherBody)
	})
}

func (c *cell) hold(w http.ResponseWriter, r *http.Request, name string) {
	if name != "cell2" {
		c.wrongCell.Add(1)
	}
	if id := r.Header.Get(pollIDHeader); id == "" {
		c.noID.Add(1)
	} else {
		c.mu.Lock()
		c.polls[id]++
		c.mu.Unlock()
	}
	n := c.held.Add(1)
	for {
		m := c.heldMax.Load()
		if n <= m || c.heldMax.CompareAndSwap(m, n) {
			break
		}
	}
	defer c.held.Add(-1)
	select {
	case <-c.release:
		w.Header().Set("X-GitLab-Last-Update", "longpollsoak")
		w.WriteHeader(http.StatusNoContent)
		c.answered.Add(1)
	case <-r.Context().Done():
		c.canceled.Add(1)
	}
}

func (c *cell) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c.stats())
	})
	mux.HandleFunc("POST /release", func(w http.ResponseWriter, r *http.Request) {
		c.releaseAll()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func (c *cell) stats() cellStats {
	s := cellStats{
		Held:       c.held.Load(),
		HeldMax:    c.heldMax.Load(),
		Answered:   c.answered.Load(),
		Canceled:   c.canceled.Load(),
		NoID:       c.noID.Load(),
		WrongCell:  c.wrongCell.Load(),
		Other:      c.other.Load(),
		ReleasedAt: c.releasedAt.Load(),
	}
	s.Released = s.ReleasedAt != 0
	c.mu.Lock()
	defer c.mu.Unlock()
	s.PollsSeen = len(c.polls)
	for _, n := range c.polls {
		if n > 1 {
			s.Retried++
		}
	}
	return s
}
