// Command soakcell is one fake GitLab cell for the chaos soak (bench/cmd/chaossoak): an
// internal/testkit/cellsim cell (the runner API: job request long polls, traces, job updates) on a
// listener, and a control listener the soak queues jobs through.
//
// Its jobs outlive the process, as a GitLab cell's database outlives its web processes: every
// change is appended to a ledger file (bench.LedgerEntry, one JSON line) before the cell answers,
// and a cell started on an existing ledger restores its jobs from it (pending ones queued again,
// handed-out ones never again), so the soak can kill -9 it and start it again on the same ports.
// The ledger also lists every request's Soak-Request-Id, so the soak can tell a request that
// reached the cell twice.
//
//	soakcell -id 2 -listen 127.0.0.1:3002 -control 127.0.0.1:4002 -ledger cell2.ledger \
//	    -jwt-key key.pem -long-poll 10s [-legacy] [-incarnation N] [-accept tokens.txt]
//
// -accept names runner tokens, one per line, the cell takes as its own although they name
// another cell: the runners of an organization moved here (their tokens still say the cell that
// minted them). It is read at every start, so it outlives the process as the ledger does.
//
// It prints "listening cell ADDR", "listening control ADDR", "restored N jobs (P pending)" and
// "ready" on stdout. Control: POST /jobs {"ids":[...]} queues jobs with those ids (200 {"queued":
// n} once the ledger has them); GET /stats answers {"pending","running","finished","held"};
// POST /cut {"held_ms":N} arms the cell-mid-answer fault: the next 201 handing out a job to a
// job request held at least N ms is cut in the middle of its body and the process exits
// (exit status 3), as a cell worker restarted during a deploy; the ledger marks it cut.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
	"gitlab.com/edge/edge/internal/testkit/cellsim"
)

// CellHeader names the cell on every answer it writes: an answer without it was made by edge.
const CellHeader = "Soak-Cell"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "soakcell:", err)
		os.Exit(1)
	}
}

type options struct {
	id                      uint64
	legacy                  bool
	listen, control, ledger string
	jwtKey, kid, iss, aud   string
	longPoll                time.Duration
	incarnation             int
	accept                  string
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("soakcell", flag.ContinueOnError)
	fs.Uint64Var(&o.id, "id", 0, "cell id (required)")
	fs.BoolVar(&o.legacy, "legacy", false, "the legacy cell")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:0", "the cell's listener")
	fs.StringVar(&o.control, "control", "127.0.0.1:0", "the control listener")
	fs.StringVar(&o.ledger, "ledger", "", "the ledger file, read at start and appended to (required)")
	fs.StringVar(&o.jwtKey, "jwt-key", "", "PEM RSA key to sign job tokens (RS256 JWTs) with; empty: opaque job tokens")
	fs.StringVar(&o.kid, "kid", "k1", "the job tokens' kid")
	fs.StringVar(&o.iss, "issuer", "https://gitlab.example.com", "the job tokens' issuer")
	fs.StringVar(&o.aud, "audience", "gitlab-authz-token", "the job tokens' audience")
	fs.DurationVar(&o.longPoll, "long-poll", 10*time.Second, "how long a job request is held when there is no job")
	fs.IntVar(&o.incarnation, "incarnation", 0, "how many times this cell was started before (written to the ledger)")
	fs.StringVar(&o.accept, "accept", "", "a file of runner tokens (one per line) the cell takes as its own: an organization moved here")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.id == 0 || o.ledger == "" {
		return o, errors.New("-id and -ledger are required")
	}
	return o, nil
}

func run(args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	opts := cellsim.Options{CellID: o.id, Legacy: o.legacy, LongPoll: o.longPoll}
	if o.jwtKey != "" {
		pemBytes, err := os.ReadFile(o.jwtKey)
		if err != nil {
			return err
		}
		key, err := bench.ParseRSAPrivateKey(pemBytes)
		if err != nil {
			return err
		}
		opts.JobToken = &cellsim.JobTokenSigner{Key: key, Algorithm: "RS256", KID: o.kid, Issuer: o.iss, Audience: o.aud, TTL: 24 * time.Hour}
	}
	c, restored, pending, err := open(opts, o.ledger, o.incarnation)
	if err != nil {
		return err
	}
	defer c.ledger.Close()
	if o.accept != "" {
		b, err := os.ReadFile(o.accept)
		if err != nil {
			return err
		}
		for _, tok := range strings.Fields(string(b)) {
			c.cell.AcceptToken(tok)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	servers, err := bench.Serve(os.Stdout, []bench.Listener{
		{Name: "cell", Addr: o.listen, Handler: c.handler()},
		{Name: "control", Addr: o.control, Handler: c.controlHandler()},
	})
	if err != nil {
		return err
	}
	fmt.Printf("restored %d jobs (%d pending)\nready\n", restored, pending)
	if err := servers.Wait(ctx); err != nil {
		return err
	}
	servers.Shutdown()
	return nil
}

// open makes the cell, restores the jobs of an existing ledger and opens it for appending.
func open(opts cellsim.Options, ledger string, incarnation int) (c *soakCell, restored, pending int, err error) {
	cell, err := cellsim.New(opts)
	if err != nil {
		return nil, 0, 0, err
	}
	c = &soakCell{cell: cell, id: opts.CellID, incarnation: incarnation, jobs: map[uint64]bool{}, exit: os.Exit}
	if restored, pending, err = c.restore(ledger); err != nil {
		return nil, 0, 0, err
	}
	if c.ledger, err = os.OpenFile(ledger, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
		return nil, 0, 0, err
	}
	if err := c.write(bench.LedgerEntry{Ev: bench.LedgerStarted, Incarnation: incarnation, Restored: restored}); err != nil {
		c.ledger.Close()
		return nil, 0, 0, err
	}
	return c, restored, pending, nil
}

// soakCell is the cellsim cell with its ledger.
type soakCell struct {
	cell        *cellsim.Cell
	id          uint64
	incarnation int

	mu     sync.Mutex
	ledger *os.File
	jobs   map[uint64]bool // every job id the cell knows
	cut    cutOrder
	exit   func(code int) // os.Exit; a test's stand-in
}

// write appends one ledger line (one write, so a kill -9 cuts at most the line being written,
// which ReadLedger skips).
func (c *soakCell) write(e bench.LedgerEntry) error {
	e.T = time.Now().UnixMilli()
	e.Cell = c.id
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.ledger.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

// restore gives the cell the jobs of an existing ledger, in their queue order.
func (c *soakCell) restore(path string) (restored, pending int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	l, err := bench.ReadLedger(f)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	for _, id := range l.Order {
		j := l.Jobs[id]
		if j.Token == "" {
			continue // a line without the token cannot be restored; never written by this cell
		}
		if err := c.cell.RestoreJob(cellsim.Job{ID: j.ID, Token: j.Token, State: j.State, Trace: j.Trace}); err != nil {
			return 0, 0, err
		}
		c.jobs[id] = true
		restored++
		if j.State == "pending" {
			pending++
		}
	}
	return restored, pending, nil
}

// handler is the cell's runner API, with its name on every answer, and the ledger written
// before the answers that hand out or change a job.
func (c *soakCell) handler() http.Handler {
	inner := c.cell.Handler()
	name := strconv.FormatUint(c.id, 10)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(CellHeader, name)
		req := r.Header.Get(bench.RequestIDHeader)
		route, jobID := route(r)
		if req != "" {
			if err := c.write(bench.LedgerEntry{Ev: bench.LedgerSeen, Req: req, Route: route}); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		inner.ServeHTTP(&ledgerWriter{ResponseWriter: w, c: c, route: route, jobID: jobID, req: req, arrived: time.Now()}, r)
	})
}

// route names the request as the ledger does, with the job id of a job call.
func route(r *http.Request) (string, uint64) {
	p := r.URL.Path
	if r.Method == http.MethodPost && p == "/api/v4/jobs/request" {
		return "jobs/request", 0
	}
	rest, ok := strings.CutPrefix(p, "/api/v4/jobs/")
	if !ok {
		return "other", 0
	}
	idText, tail, _ := strings.Cut(rest, "/")
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		return "other", 0
	}
	switch {
	case r.Method == http.MethodPut && tail == "":
		return "jobs/:id", id
	case r.Method == http.MethodPatch && tail == "trace":
		return "jobs/:id/trace", id
	}
	return "other", 0
}

// stats is GET /stats on the control listener.
type stats struct {
	Pending  int `json:"pending"`
	Running  int `json:"running"`
	Finished int `json:"finished"`
	Held     int `json:"held"`
}

func (c *soakCell) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /jobs", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			IDs []uint64 `json:"ids"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, id := range in.IDs {
			if err := c.cell.AddJobWithID(id); err != nil {
				http.Error(w, err.Error(), http.StatusConflict)
				return
			}
			j, _ := c.cell.Job(id)
			c.mu.Lock()
			c.jobs[id] = true
			c.mu.Unlock()
			if err := c.write(bench.LedgerEntry{Ev: bench.LedgerQueued, ID: id, Token: j.Token}); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"queued\":%d}\n", len(in.IDs))
	})
	mux.HandleFunc("POST /cut", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			HeldMS int64 `json:"held_ms"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&in); err != nil || in.HeldMS < 0 {
			http.Error(w, fmt.Sprintf("want {\"held_ms\": N >= 0}: %v", err), http.StatusBadRequest)
			return
		}
		c.cut.arm(time.Duration(in.HeldMS) * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"armed":true}`)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		ids := make([]uint64, 0, len(c.jobs))
		for id := range c.jobs {
			ids = append(ids, id)
		}
		c.mu.Unlock()
		s := stats{Held: c.cell.Held()}
		for _, id := range ids {
			j, _ := c.cell.Job(id)
			switch j.State {
			case "pending":
				s.Pending++
			case "running":
				s.Running++
			default:
				s.Finished++
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	return mux
}
