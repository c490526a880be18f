package integration

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
)

// The JWT settings of the demo key pair in examples/keys, shared by the cells and edge.
const (
	jwtKID      = "k1"
	jwtIssuer   = "https://gitlab.example.com"
	jwtAudience = "gitlab-authz-token"
)

// Each cell's id ranges in every test config; job ids at or above outsideRanges belong to no
// range, so only a token or a learned id can route them.
const outsideRanges = 90_000_000

// cellRanges are the id ranges of cells 1 (legacy), 2 and 3.
func cellRanges(id uint64) []string {
	switch id {
	case 1:
		return []string{"1-1999999"}
	case 2:
		return []string{"2000000-3999999"}
	case 3:
		return []string{"4000000-5999999"}
	}
	return nil
}

// jobIDBase is where each cell's own job ids start: inside its range.
func jobIDBase(id uint64) uint64 {
	switch id {
	case 1:
		return 1_000_001
	case 2:
		return 2_000_001
	case 3:
		return 4_000_001
	}
	return outsideRanges + id*1000
}

// envOptions shape one test environment: three cells and an edge in front of them.
type envOptions struct {
	longPoll time.Duration
	// jwtJobTokens: cells issue JWT job tokens signed with the demo key (else opaque ones).
	jwtJobTokens bool
	legacyCellID bool // the JWTs carry the older cell_id claim
	// config is applied to the generated edge config before edge starts.
	config func(*edgeConfig)
}

type env struct {
	t      *testing.T
	cells  map[uint64]*cellsim.Server
	edge   *edgeProc
	client *http.Client // never follows redirects
	seen   map[uint64]int

	mu     sync.Mutex
	tokens map[string]bool // every token sent through edge, to check that edge never prints one
}

// newEnv starts cells 1 (legacy), 2 and 3 and an edge routing to them.
func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	e := &env{t: t, cells: map[uint64]*cellsim.Server{}, seen: map[uint64]int{}, tokens: map[string]bool{}}
	cfg := baseConfig()
	cfg.Log = logConfig{Level: "debug", Format: "text"}
	for _, id := range []uint64{1, 2, 3} {
		opts := cellsim.Options{
			CellID: id, Legacy: id == 1, JobIDBase: jobIDBase(id), LongPoll: o.longPoll,
			Log: slog.New(slog.DiscardHandler),
		}
		if o.jwtJobTokens {
			opts.JobToken = &cellsim.JobTokenSigner{
				Key: demoPrivateKey(t), Algorithm: "RS256", KID: jwtKID,
				Issuer: jwtIssuer, Audience: jwtAudience, LegacyCellID: o.legacyCellID,
			}
		}
		s, err := cellsim.NewServer("", opts)
		if err != nil {
			t.Fatalf("cell %d: %v", id, err)
		}
		t.Cleanup(func() { s.Close() })
		e.cells[id] = s
		cfg.Cells = append(cfg.Cells, cellConfig{ID: id, URL: s.URL, Legacy: id == 1, IDRanges: cellRanges(id)})
	}
	if o.config != nil {
		o.config(&cfg)
	}
	e.edge = startEdge(t, cfg)
	e.client = newClient(64)
	t.Cleanup(e.checkNoTokenPrinted)
	return e
}

// checkNoTokenPrinted stops edge and looks for any piece of any token sent in its output.
func (e *env) checkNoTokenPrinted() {
	e.edge.stop(10 * time.Second)
	out := e.edge.out.String()
	e.mu.Lock()
	defer e.mu.Unlock()
	for tok := range e.tokens {
		if leakedPart(tok, out) != "" {
			e.t.Errorf("edge printed a piece of a %d-character token it was sent", len(tok))
		}
	}
}

// noteTokens remembers the tokens of an outgoing request.
func (e *env) noteTokens(o outgoing) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range []string{"Runner-Token", "Job-Token", "Private-Token"} {
		if v := o.header.Get(k); v != "" {
			e.tokens[v] = true
		}
	}
	var body struct {
		Token string `json:"token"`
	}
	if json.Unmarshal(o.body, &body) == nil && body.Token != "" {
		e.tokens[body.Token] = true
	}
	if v, err := url.ParseQuery(string(o.body)); err == nil && v.Get("token") != "" {
		e.tokens[v.Get("token")] = true
	}
}

// baseConfig has everything but the cells and listeners: JWT verification with the demo key.
func baseConfig() edgeConfig {
	return edgeConfig{
		Routing: routingConfig{BodyTokenLimit: "32KiB", LongPollTimeout: "65s"},
		Tokens: tokensConfig{JobJWT: jobJWTConfig{
			Verify: true, OnInvalid: "ignore",
			Keys:   []keyConfig{{KID: jwtKID, Alg: "RS256", File: demoKeyPath("gitlab-jwt.pub")}},
			Issuer: jwtIssuer, Audience: jwtAudience,
		}},
	}
}

// newClient is a client that never follows redirects (a runner hands them to its own logic).
func newClient(idle int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			MaxIdleConns:        idle,
			MaxIdleConnsPerHost: idle,
			MaxConnsPerHost:     0,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func demoKeyPath(name string) string {
	root, _ := repoRoot() // TestMain has checked it
	return filepath.Join(root, "examples", "keys", name)
}

// demoPrivateKey is examples/keys/gitlab-jwt.key, the published demo signing key.
func demoPrivateKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	b, err := os.ReadFile(demoKeyPath("gitlab-jwt.key"))
	if err != nil {
		t.Fatalf("demo key: %v", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("demo key: no PEM block")
	}
	var key any
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		err = fmt.Errorf("unexpected PEM block %q", block.Type)
	}
	if err != nil {
		t.Fatalf("demo key: %v", err)
	}
	rk, ok := key.(*rsa.PrivateKey)
	if !ok {
		t.Fatalf("demo key: %T, want RSA", key)
	}
	return rk
}

func (e *env) cell(id uint64) *cellsim.Server { return e.cells[id] }

// mark remembers how many records every cell has, for expectAt and expectNowhere.
func (e *env) mark() {
	for id, c := range e.cells {
		e.seen[id] = len(c.Records())
	}
}

// newRecords returns the records since the last mark, by cell, and marks.
func (e *env) newRecords() map[uint64][]cellsim.Record {
	out := map[uint64][]cellsim.Record{}
	for id, c := range e.cells {
		rs := c.Records()
		if n := e.seen[id]; len(rs) > n {
			out[id] = rs[n:]
		}
		e.seen[id] = len(rs)
	}
	return out
}

// expectAt checks that exactly one request reached any cell since the last mark, that it
// reached cell want, and that the cell did not judge it misrouted. It returns its record.
func (e *env) expectAt(t *testing.T, want uint64) cellsim.Record {
	t.Helper()
	got := e.newRecords()
	var all []string
	for id, rs := range got {
		for _, r := range rs {
			all = append(all, fmt.Sprintf("cell %d: %s", id, r))
		}
	}
	slices.Sort(all)
	if len(got[want]) != 1 || len(all) != 1 {
		t.Fatalf("want exactly one request at cell %d, got %d request(s): %v", want, len(all), all)
	}
	r := got[want][0]
	if r.Misrouted {
		t.Errorf("cell %d judged the request misrouted: %s", want, r)
	}
	return r
}

// expectNowhere checks that no request reached any cell since the last mark.
func (e *env) expectNowhere(t *testing.T) {
	t.Helper()
	for id, rs := range e.newRecords() {
		for _, r := range rs {
			t.Errorf("want no request at any cell, cell %d got: %s", id, r)
		}
	}
}
