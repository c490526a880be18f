package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
)

// The ledger of a soak cell (bench/cmd/soakcell): one JSON object per line, appended by the cell
// process before it answers, so that it survives a kill -9 of the cell and is what a restarted
// cell restores its jobs from, as a GitLab cell's database outlives its web processes. The chaos
// soak (bench/cmd/chaossoak) reads the ledgers of its cells at the end to judge whether every job
// was handed out once.
const (
	// LedgerQueued: the soak queued job ID (Token is its job token). Written after the cell
	// queued it, so a runner may have claimed it a moment earlier: the ledger's order is not
	// the jobs' history, and ReadLedger never moves a job back to pending.
	LedgerQueued = "queued"
	// LedgerClaimed: the cell handed job ID out in a 201 to the job request Req. Written before
	// the answer, so a claim whose answer was lost (edge killed while it passed) is still here.
	LedgerClaimed = "claimed"
	// LedgerUpdated: a job call (PUT jobs/:id, PATCH trace) changed job ID; State and Trace are
	// the job's after it. Written before the answer.
	LedgerUpdated = "updated"
	// LedgerSeen: a request reached the cell; Req is its Soak-Request-Id, Route the cell's route.
	LedgerSeen = "seen"
	// LedgerStarted: a cell process started (Incarnation 0 first, then one more per restart)
	// after restoring Restored jobs.
	LedgerStarted = "started"
	// LedgerCut: the cell cut its 201 to the job request Req, which hands out job ID, in the
	// middle of the body and exited (the chaos soak's cell-mid-answer fault). Written after the
	// claimed line and before the first byte of the answer: no runner can have the job.
	LedgerCut = "cut"
)

// RequestIDHeader carries a unique id per request from the soak's clients; edge passes it on,
// so a cell or upstream that sees an id twice got a request twice.
const RequestIDHeader = "Soak-Request-Id"

// LedgerEntry is one line of a soak cell's ledger.
type LedgerEntry struct {
	T           int64  `json:"t"` // unix milliseconds
	Ev          string `json:"ev"`
	Cell        uint64 `json:"cell"`
	ID          uint64 `json:"id,omitempty"`
	Token       string `json:"token,omitempty"`
	State       string `json:"state,omitempty"`
	Trace       []byte `json:"trace,omitempty"`
	Req         string `json:"req,omitempty"`
	Route       string `json:"route,omitempty"`
	Incarnation int    `json:"incarnation,omitempty"`
	Restored    int    `json:"restored,omitempty"`
}

// LedgerClaim is one hand-out of a job.
type LedgerClaim struct {
	At          time.Time
	Req         string // the job request's Soak-Request-Id
	Incarnation int    // which cell process handed it out
	Cut         bool   // the cell cut this answer mid-body and exited (LedgerCut)
}

// LedgerJob is what a ledger says of one job.
type LedgerJob struct {
	ID      uint64
	Cell    uint64
	Token   string
	State   string // pending, running, success, ...
	Trace   []byte
	Queued  time.Time // zero when no queued line was written (the cell died first)
	Claims  []LedgerClaim
	Updated time.Time
}

// Ledger is a whole ledger read back.
type Ledger struct {
	Jobs  map[uint64]*LedgerJob
	Order []uint64       // job ids by their first line: the queue order a restart restores
	Seen  map[string]int // Soak-Request-Id -> times a request with it reached the cell
	// SeenAt is when the requests seen more than once arrived, each time.
	SeenAt  map[string][]time.Time
	firstAt map[string]time.Time
	Routes  map[string]int // route -> requests seen
	Starts  []LedgerEntry  // the started lines, one per cell process
	Partial bool           // the last line was cut (a kill -9 in the middle of a write); ignored
	entries int            // lines read
}

// Lines is how many lines were read.
func (l *Ledger) Lines() int { return l.entries }

// ReadLedger reads a ledger. A last line without its newline is skipped (Partial); any other
// line that is not an entry is an error.
func ReadLedger(r io.Reader) (*Ledger, error) {
	l := NewLedger()
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			if len(bytes.TrimSpace(line)) > 0 {
				l.Partial = true
			}
			return l, nil
		}
		if err != nil {
			return nil, fmt.Errorf("ledger line %d: %w", n, err)
		}
		var e LedgerEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("ledger line %d: %w", n, err)
		}
		l.Add(e)
	}
}

// NewLedger is an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{Jobs: map[uint64]*LedgerJob{}, Seen: map[string]int{}, Routes: map[string]int{},
		SeenAt: map[string][]time.Time{}, firstAt: map[string]time.Time{}}
}

// Add folds one entry into the ledger, after those added before it.
func (l *Ledger) Add(e LedgerEntry) {
	l.entries++
	switch e.Ev {
	case LedgerSeen:
		l.Seen[e.Req]++
		l.Routes[e.Route]++
		at := time.UnixMilli(e.T)
		switch n := l.Seen[e.Req]; {
		case n == 1:
			l.firstAt[e.Req] = at
		case n == 2:
			l.SeenAt[e.Req] = []time.Time{l.firstAt[e.Req], at}
		default:
			l.SeenAt[e.Req] = append(l.SeenAt[e.Req], at)
		}
		return
	case LedgerStarted:
		l.Starts = append(l.Starts, e)
		return
	}
	if e.ID == 0 {
		return
	}
	j := l.Jobs[e.ID]
	if j == nil {
		j = &LedgerJob{ID: e.ID, Cell: e.Cell, State: "pending"}
		l.Jobs[e.ID] = j
		l.Order = append(l.Order, e.ID)
	}
	if j.Token == "" {
		j.Token = e.Token
	}
	at := time.UnixMilli(e.T)
	switch e.Ev {
	case LedgerQueued:
		j.Queued = at
	case LedgerClaimed:
		j.Claims = append(j.Claims, LedgerClaim{At: at, Req: e.Req, Incarnation: e.Incarnation})
		if j.State == "pending" {
			j.State = "running"
		}
	case LedgerCut:
		for i := range j.Claims {
			if j.Claims[i].Req == e.Req {
				j.Claims[i].Cut = true
			}
		}
	case LedgerUpdated:
		if e.State != "" && e.State != "pending" {
			j.State = e.State
		}
		j.Trace = e.Trace
		j.Updated = at
	}
}

// Duplicates are the request ids seen more than once, sorted.
func (l *Ledger) Duplicates() []string {
	var out []string
	for id, n := range l.Seen {
		if n > 1 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
