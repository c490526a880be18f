// Package cellrouter sends runner and job traffic to its cell and everything else to the legacy
// cell: it finds the token wherever the runner put it, decides the cell (tokens.md section 4),
// proxies the request, holds long polls (parking them off the server), and asks admission
// controllers about each job before the runner gets it.
package cellrouter

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/tracing"
	"gitlab.com/edge/edge/wire"
)

// Options configure a Router. Zero durations and limits take the defaults of contract.md.
type Options struct {
	Cells *discovery.Cells
	// Verifier checks job token JWTs. Nil with RouteUnverified routes on unverified claims
	// (tokens.job_jwt.verify: false); nil without it ignores job JWTs for routing.
	Verifier        JobVerifier
	RouteUnverified bool
	// RejectInvalid answers 401 to a job JWT that fails verification instead of ignoring it.
	RejectInvalid bool
	Classifier    Classifier // nil: the classify rule is skipped
	Learned       JobLearner // nil: job ids are not learned
	// Moves are the organizations moved to another cell; nil: none are followed.
	Moves OrgMoves
	// Health keeps the cells' health across proxies (reloads); nil: this proxy's own.
	Health *discovery.Health
	// Tracer makes a client span of every call to a cell; nil: none.
	Tracer *tracing.Tracer
	// Admission asks controllers about each job before the runner gets it; nil: none.
	Admission *Admission

	BodyTokenLimit  int64
	BodyReadTimeout time.Duration
	LongPollTimeout time.Duration
	UpstreamTimeout time.Duration
	DialTimeout     time.Duration

	// Transport, when set, carries every upstream request (tests); otherwise edge builds one for
	// long polls and one for everything else from the timeouts above.
	Transport http.RoundTripper
	// Parking parks held jobs/request polls of the public listener (served through its
	// Listener); nil: long polls are held by their handlers.
	Parking *wire.Parking

	Log     *slog.Logger
	Metrics *Metrics
}

// Router routes runner and job traffic to cells and everything else to the legacy cell.
type Router struct {
	cells           *discovery.Cells
	verifier        JobVerifier
	routeUnverified bool
	rejectInvalid   bool
	classifier      Classifier
	learned         JobLearner
	bodyReadTimeout time.Duration
	prefixes        *prefixPool
	log             *slog.Logger
	metrics         *Metrics
	targets         map[uint64]*target
	transports      []*wire.InlineTransport
	cellTransport   http.RoundTripper // edge's own calls to cells (failing a rejected job)
	health          *discovery.Health
	admission       *Admission
	parkable        bool // long polls may be parked: inline cell transports, no tracing
	parking         *wire.Parking
	moves           OrgMoves
	// inline and polls carry the requests edge writes itself (direct.go), polls the jobs/request
	// that may be parked; nil when a transport was given or tracing is on.
	inline, polls *wire.InlineTransport
	sendBuffers   sendBuffers
}

// New builds a Router. Metrics may be nil only in tests that do not look at them.
func New(o Options) (*Router, error) {
	if o.Cells == nil {
		return nil, errors.New("cellrouter: no cells")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		m, err := NewMetrics(prometheus.NewRegistry())
		if err != nil {
			return nil, err
		}
		o.Metrics = m
	}
	setDefault(&o.BodyTokenLimit, 32<<10)
	setDefault(&o.BodyReadTimeout, 10*time.Second)
	setDefault(&o.LongPollTimeout, 65*time.Second)
	setDefault(&o.UpstreamTimeout, 60*time.Second)
	setDefault(&o.DialTimeout, 5*time.Second)
	p := &Router{
		cells:           o.Cells,
		verifier:        o.Verifier,
		routeUnverified: o.RouteUnverified,
		rejectInvalid:   o.RejectInvalid,
		classifier:      o.Classifier,
		learned:         o.Learned,
		moves:           o.Moves,
		bodyReadTimeout: o.BodyReadTimeout,
		prefixes:        newPrefixPool(o.BodyTokenLimit),
		log:             o.Log,
		metrics:         o.Metrics,
		health:          o.Health,
		admission:       o.Admission,
		parking:         o.Parking,
	}
	if p.health == nil {
		h, err := discovery.NewHealth(discovery.HealthOptions{Log: o.Log})
		if err != nil {
			return nil, err
		}
		p.health = h
	}
	p.targets = p.newTargets(o)
	p.parkable = o.Transport == nil && o.Tracer == nil
	if p.admission != nil && p.metrics != nil {
		p.metrics.admission.zero(p.admission.Controllers)
	}
	return p, nil
}

func setDefault[T int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// trafficHandler serves one kind of traffic: runner and job requests (TrafficRunner), or
// everything the legacy cell serves (TrafficOther).
type trafficHandler struct {
	p    *Router
	kind TrafficKind
}

func (h trafficHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := hop.RecordOf(w)
	if rec == nil {
		rec = &hop.Record{ResponseWriter: w}
	}
	h.p.serve(rec, r, h.kind)
}

// serve routes one runner or legacy request to its cell. The front has applied the header
// policy and recorded the request id; w is its record.
func (p *Router) serve(w *hop.Record, r *http.Request, kind TrafficKind) {
	start := time.Now()
	inFlight := p.metrics.inFlightBy[kind]
	inFlight.Inc()

	d, err := p.decide(w, r, kind)
	if err == nil {
		err = p.holdSmallBody(w, r)
	}
	if kind == TrafficRunner {
		w.Token = d.Kind.String()
	}
	if err != nil && errors.Is(err, hop.ErrOrgMoving) {
		p.holdBack(w, r, d, kind, inFlight)
		return
	}
	if err != nil {
		status, cause := hop.StatusOf(err)
		p.metrics.decision(d.Source, d.Kind, 0, true)
		p.log.Info("request refused", "method", r.Method, "path", r.URL.Path, "status", status,
			"cause", cause, "token_source", d.Source.String(), "token_kind", d.Kind.String(),
			"request_id", w.ID[0], "error", err)
		hop.Error(w, err)
		p.metrics.Requests.WithLabelValues(kind.String(), "edge", hop.CodeClass(status)).Inc()
		inFlight.Dec()
		return
	}
	p.metrics.decision(d.Source, d.Kind, d.Rule, false)
	w.Cell, w.Rule = d.Cell.ID, d.Rule.String()
	t := p.targets[d.Cell.ID]
	if a := t.health.Pick(); a == nil {
		p.cellUnavailable(w, t)
	} else {
		rp := t.proxies(a)
		a.Begin()
		if kind == TrafficRunner && r.Method == http.MethodPost && r.URL.Path == wire.JobsRequestPath {
			if p.pollJob(w, r, t, rp, func() { a.End(); p.served(w, r, t, kind, start) }) {
				return // parked: the rest happens when the cell answers
			}
		} else if p.direct(rp, r) {
			p.forwardDirect(w, r, t, rp)
		} else {
			rp.plain.ServeHTTP(w, r)
		}
		a.End()
	}
	p.served(w, r, t, kind, start)
}

// orgMovingRetry is the Retry-After of a frozen organization's runner calls: the copy of its
// data takes minutes, a runner's next poll comes anyway.
const orgMovingRetry = "5"

// holdBack answers a runner call of an organization frozen for its move without sending it to
// any cell: a jobs/request gets 204 (no job now, as a cell says it), anything else 503 with the
// cause organization_moving; both with Retry-After.
func (p *Router) holdBack(w *hop.Record, r *http.Request, d Decision, kind TrafficKind, inFlight prometheus.Gauge) {
	defer inFlight.Dec()
	p.metrics.decision(d.Source, d.Kind, RuleOrgMove, false)
	w.Rule = RuleOrgMove.String()
	w.Header().Set("Retry-After", orgMovingRetry)
	status := http.StatusNoContent
	if r.Method == http.MethodPost && r.URL.Path == wire.JobsRequestPath {
		w.WriteHeader(status)
	} else {
		status = http.StatusServiceUnavailable
		hop.Error(w, fmt.Errorf("%w: organization %d", hop.ErrOrgMoving, d.Move.Org))
	}
	p.metrics.Requests.WithLabelValues(kind.String(), "edge", hop.CodeClass(status)).Inc()
}

// served counts a request answered (or given up) by its cell.
func (p *Router) served(w *hop.Record, r *http.Request, t *target, kind TrafficKind, start time.Time) {
	p.metrics.inFlightBy[kind].Dec()
	status := w.Status
	if status == 0 {
		status = hop.StatusClientClosed
	}
	t.requests(kind, status).Inc()
	took := time.Since(start)
	t.health.Observe(status, took)
	p.metrics.durationBy[kind][endpointOf(kind, r.URL.Path)].Observe(took.Seconds())
}

// explain is the decision for a request, without sending it anywhere.
func (p *Router) explain(r *http.Request, kind TrafficKind) (Decision, error) {
	d, err := p.decide(nil, r, kind)
	if err == nil {
		p.explainAdmission(&d, r)
	}
	return d, err
}

func (p *Router) decide(w http.ResponseWriter, r *http.Request, kind TrafficKind) (Decision, error) {
	if kind != TrafficRunner {
		return Decision{Traffic: TrafficOther, Cell: p.cells.Legacy(), Rule: RuleNotRunnerTraffic}, nil
	}
	var found foundTokens
	headerAndQueryTokens(r, &found)
	note, err := p.bodyToken(w, r, &found)
	if err != nil {
		return Decision{Traffic: TrafficRunner, Body: note}, err
	}
	d, err := p.route(r.Context(), r.URL.Path, found.all())
	d.Body = note
	return d, err
}

// Why a body was or was not read for a token, as explain shows it.
const (
	bodyNotOnEndpoint = "not read: this endpoint never carries its token in the body"
	bodyNotJSONOrForm = "not read: Content-Type is not application/json or application/x-www-form-urlencoded"
	bodyRead          = "read: the whole body, for a token field"
	bodyTooLarge      = "not read: larger than routing.body_token_limit"
	bodyStreamed      = "not read: larger than routing.body_token_limit; streamed unread, a header or the query carries the token"
)

// bodyToken adds the token of a small JSON or form body on the endpoints whose older clients
// send it only there, and says what it did with the body.
func (p *Router) bodyToken(w http.ResponseWriter, r *http.Request, found *foundTokens) (string, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return "", nil
	}
	if !mayCarryBodyToken(r.Method, r.URL.Path) {
		return bodyNotOnEndpoint, nil
	}
	format := bodyFormatOf(r.Header.Get("Content-Type"))
	if format == bodyOther {
		return bodyNotJSONOrForm, nil
	}
	headerToken := found.n > 0
	// With a token in a header, a body too large to check is streamed; without one, the body
	// is the only place left and, as Workhorse does, edge refuses what it will not read.
	if r.ContentLength > p.prefixes.limit {
		if !headerToken {
			return bodyTooLarge, hop.ErrBodyTooLarge
		}
		return bodyStreamed, nil
	}
	prefix, err := p.prefixes.read(w, r, p.bodyReadTimeout)
	if err != nil {
		return "", err
	}
	replay(r, prefix)
	switch {
	case prefix.complete:
		if t, ok := bodyToken(format, prefix.data); ok {
			found.add(t.source, t.value)
		}
		return bodyRead, nil
	case !headerToken:
		return bodyTooLarge, hop.ErrBodyTooLarge
	}
	return bodyStreamed, nil
}

// isRunnerPath tells runner and job traffic by its path: /api/v4/runners and /api/v4/jobs, and
// below them.
func isRunnerPath(path string) bool {
	const runners, jobs = "/api/v4/runners", "/api/v4/jobs"
	return hasPathPrefix(path, runners) || hasPathPrefix(path, jobs)
}

func hasPathPrefix(path, prefix string) bool {
	return strings.HasPrefix(path, prefix) && (len(path) == len(prefix) || path[len(prefix)] == '/')
}

// mayCarryBodyToken lists the runner-api.md endpoints whose older clients send the token only in
// the body. Trace and artifact bodies are never read.
func mayCarryBodyToken(method, path string) bool {
	switch method {
	case http.MethodPost:
		switch path {
		case "/api/v4/runners", "/api/v4/runners/verify", "/api/v4/runners/reset_authentication_token", wire.JobsRequestPath:
			return true
		}
	case http.MethodDelete:
		return path == "/api/v4/runners" || path == "/api/v4/runners/managers"
	case http.MethodPut:
		id, ok := jobIDFromPath(path)
		return ok && id > 0 && strings.IndexByte(path[len("/api/v4/jobs/"):], '/') < 0
	}
	return false
}

// endpoint keeps the duration histogram's cardinality fixed: ids never become labels.
type endpoint uint8

const (
	endpointOther endpoint = iota
	endpointJobsRequest
	endpointJobTrace
	endpointJobArtifacts
	endpointJobs
	endpointRunners
	numEndpoints
)

func (r endpoint) String() string {
	switch r {
	case endpointJobsRequest:
		return "jobs_request"
	case endpointJobTrace:
		return "job_trace"
	case endpointJobArtifacts:
		return "job_artifacts"
	case endpointJobs:
		return "jobs"
	case endpointRunners:
		return "runners"
	}
	return "other"
}

func endpointOf(kind TrafficKind, path string) endpoint {
	switch {
	case kind != TrafficRunner:
		return endpointOther
	case path == wire.JobsRequestPath:
		return endpointJobsRequest
	case strings.HasSuffix(path, "/trace"):
		return endpointJobTrace
	case strings.HasSuffix(path, "/artifacts"):
		return endpointJobArtifacts
	case hasPathPrefix(path, "/api/v4/jobs"):
		return endpointJobs
	}
	return endpointRunners
}
