// Package cellsim is a fake GitLab cell. It speaks the part of the runner API that edge routes
// (runner registration and verification, the job request long poll, job updates, traces and
// artifacts) the way GitLab answers it, and records every request that reaches it, so tests and
// the demo (cmd/edge-demo) can tell where traffic went and whether its bytes arrived intact.
//
// A cell authenticates tokens the way a real cell would look to a router: it accepts the tokens
// it issued, tokens whose routing keys name it, and (only the legacy cell) tokens that name no
// cell. Anything else is answered 403 and recorded as misrouted.
package cellsim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Options configure a Cell. Only CellID is required.
type Options struct {
	CellID uint64
	// Legacy marks the cell that holds the tokens naming no cell (the pre-Cells instance).
	Legacy bool
	// JobIDBase is the id of the first job AddJob creates; 0 means 1.
	JobIDBase uint64
	// LongPoll is how long POST /jobs/request holds a runner whose last_update is current
	// before answering 204. Zero answers at once.
	LongPoll time.Duration
	// JobToken signs job tokens as GitLab's JWT job tokens ("glcbt-" + JWT). Nil: opaque tokens.
	JobToken *JobTokenSigner
	// RouterURL is the server_url of GET /runners/router/discovery.
	// Default: wss://kas.cell<id>.example.com.
	RouterURL string
	// ObjectStorageURL is where artifact downloads redirect to.
	// Default: https://objects.cell<id>.example.com.
	ObjectStorageURL string
	// PublicArtifacts lets a download with no token at all through, as for a public project's
	// artifacts (the demo shows routing by job id with it). A token that is sent must still
	// be one the cell issued. Default: GitLab's rule, a job token is required.
	PublicArtifacts bool
	Log             *slog.Logger
}

// JobTokenSigner says how a cell signs JWT job tokens.
type JobTokenSigner struct {
	Key              any // *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey, or []byte for HS*
	Algorithm, KID   string
	Issuer, Audience string
	LegacyCellID     bool          // write the older cell_id claim instead of c
	TTL              time.Duration // how long a job token is valid; 0 means an hour
}

// Cell is one fake GitLab cell. Its methods are safe for concurrent use.
type Cell struct {
	opts Options
	log  *slog.Logger

	mu           sync.Mutex
	nextJobID    uint64
	nextRunnerID uint64
	queueValue   string        // what X-GitLab-Last-Update says; changes when a job is queued
	queueChanged chan struct{} // closed and replaced when queueValue changes
	pending      []uint64      // queued job ids, oldest first
	jobs         map[uint64]*job
	issued       map[string]bool // tokens this cell issued or was told to accept
	held         int
	inFlight     int
	stall        time.Duration

	records      []Record
	recordsAdded chan struct{} // closed and replaced on every new record
}

// New returns a cell. It fails only when opts.JobToken cannot sign.
func New(opts Options) (*Cell, error) {
	if opts.JobIDBase == 0 {
		opts.JobIDBase = 1
	}
	if opts.RouterURL == "" {
		opts.RouterURL = fmt.Sprintf("wss://kas.cell%d.example.com", opts.CellID)
	}
	if opts.ObjectStorageURL == "" {
		opts.ObjectStorageURL = fmt.Sprintf("https://objects.cell%d.example.com", opts.CellID)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cell{
		opts:         opts,
		log:          log.With("cell", opts.CellID),
		nextJobID:    opts.JobIDBase,
		nextRunnerID: 1,
		queueValue:   newQueueValue(),
		queueChanged: make(chan struct{}),
		jobs:         make(map[uint64]*job),
		issued:       make(map[string]bool),
		recordsAdded: make(chan struct{}),
	}
	if opts.JobToken != nil {
		if _, err := c.mintJobToken(opts.JobIDBase); err != nil {
			return nil, fmt.Errorf("cellsim: job token signer: %w", err)
		}
	}
	return c, nil
}

// ID is the cell's id.
func (c *Cell) ID() uint64 { return c.opts.CellID }

// Handler serves the runner API under /api/v4/. Everything else is answered 404 (and recorded).
func (c *Cell) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v4/runners", c.serve(RouteRegister, c.register))
	mux.HandleFunc("POST /api/v4/runners/verify", c.serve(RouteVerify, c.verify))
	mux.HandleFunc("DELETE /api/v4/runners", c.serve(RouteUnregister, c.unregister))
	mux.HandleFunc("DELETE /api/v4/runners/managers", c.serve(RouteUnregisterManager, c.unregister))
	mux.HandleFunc("POST /api/v4/runners/reset_authentication_token", c.serve(RouteResetToken, c.resetToken))
	mux.HandleFunc("GET /api/v4/runners/router/discovery", c.serve(RouteDiscovery, c.discovery))
	mux.HandleFunc("POST /api/v4/jobs/request", c.serve(RouteJobRequest, c.requestJob))
	mux.HandleFunc("PUT /api/v4/jobs/{id}", c.serve(RouteUpdateJob, c.updateJob))
	mux.HandleFunc("PATCH /api/v4/jobs/{id}/trace", c.serve(RouteTrace, c.patchTrace))
	mux.HandleFunc("POST /api/v4/jobs/{id}/artifacts", c.serve(RouteUploadArtifacts, c.uploadArtifacts))
	mux.HandleFunc("GET /api/v4/jobs/{id}/artifacts", c.serve(RouteDownloadArtifacts, c.downloadArtifacts))
	// GitLab's readiness endpoint, as edge's health checks ask it; not recorded.
	mux.HandleFunc("GET /-/readiness", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"ok","master_check":[{"status":"ok"}]}`)
	})
	mux.HandleFunc("/", c.serve(RouteUnknown, c.notFound))
	return mux
}

// AcceptToken makes the cell accept token as one it issued (a runner or user created here).
func (c *Cell) AcceptToken(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.issued[token] = true
}

// Held is how many job requests the cell is holding in a long poll right now.
func (c *Cell) Held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// InFlight is how many requests the cell is serving right now.
func (c *Cell) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight
}

// SetStall makes the cell wait d before it answers any request (0 turns it off), to play a
// cell that does not answer in time.
func (c *Cell) SetStall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stall = d
}

// QueueValue is the cell's current X-GitLab-Last-Update value.
func (c *Cell) QueueValue() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queueValue
}

// changeQueueLocked gives the queue a new X-GitLab-Last-Update value and wakes held requests.
func (c *Cell) changeQueueLocked() {
	c.queueValue = newQueueValue()
	close(c.queueChanged)
	c.queueChanged = make(chan struct{})
}

// newQueueValue is random like Rails' SecureRandom.hex runner queue value.
func newQueueValue() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
