package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"slices"
	"time"

	"gitlab.com/edge/edge/aggregate"
	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/moves"
)

// Status is what /status shows and /status.json returns: this edge, its cells, agents here and
// across the fleet, peer edges, aggregation members, certificates and the latest refusals. It
// holds no token, cookie or secret.
type Status struct {
	Edge         EdgeStatus      `json:"edge"`
	Cells        []CellStatus    `json:"cells"`
	AgentsHere   []AgentStatus   `json:"agents_here"`
	Fleet        []AgentStatus   `json:"fleet"`
	FleetError   string          `json:"fleet_error,omitempty"`
	Peers        []string        `json:"peers"`
	Moves        []moves.Move    `json:"org_moves"`
	Aggregation  []MemberStatus  `json:"aggregation,omitempty"`
	Certificates []CertStatus    `json:"certificates,omitempty"`
	Refusals     []front.Refusal `json:"refusals"`
}

type EdgeStatus struct {
	Version      string       `json:"version"`
	Commit       string       `json:"commit"`
	GoVersion    string       `json:"go_version"`
	Config       string       `json:"config"`
	ConfigSHA256 string       `json:"config_sha256"`
	Started      time.Time    `json:"started"`
	Uptime       string       `json:"uptime"`
	Features     []string     `json:"features"`
	LastReload   ReloadStatus `json:"last_reload"`
	Draining     bool         `json:"draining"`
}

type ReloadStatus struct {
	Time       time.Time `json:"time,omitzero"`
	Result     string    `json:"result"` // "none" before the first reload, then "ok" or "error"
	Error      string    `json:"error,omitempty"`
	Generation int       `json:"generation"`
}

// CellStatus is one cell. Up: edge sends its requests (an address its checks do not hold down);
// not up, it answers them 503 cell_unavailable without a dial. Degraded: up only through
// addresses passive evidence has ejected, which edge dials anyway.
type CellStatus struct {
	ID        uint64                   `json:"id"`
	Legacy    bool                     `json:"legacy"`
	Up        bool                     `json:"up"`
	Degraded  bool                     `json:"degraded"`
	Checked   bool                     `json:"checked"`
	Addresses []discovery.AddressState `json:"addresses"`
	Recent    discovery.Recent         `json:"recent"`
	P50       string                   `json:"p50"`
	P99       string                   `json:"p99"`
}

type AgentStatus struct {
	AgentID      string    `json:"agent_id"`
	ConnectionID string    `json:"connection_id"`
	Edge         string    `json:"edge,omitempty"`
	Since        time.Time `json:"since"`
	Version      string    `json:"version,omitempty"`
}

type MemberStatus struct {
	Name        string            `json:"name"`
	Server      string            `json:"server"`
	OpenWatches int               `json:"open_watches"`
	Last        aggregate.Outcome `json:"last"` // its last answer; zero: none yet
}

type CertStatus struct {
	Source    string    `json:"source"` // tls.static, internal.tls, tls.acme
	Names     []string  `json:"names"`
	NotAfter  time.Time `json:"not_after"`
	ExpiresIn string    `json:"expires_in"`
}

// A statusPart is what a module shows on the status page (/status and /status.json): it fills
// in its part of s. The modules' parts are asked in module order.
type statusPart interface {
	status(ctx context.Context, s *Status)
}

// statusFunc is a function as a statusPart, for a module that is no type of its own.
type statusFunc func(ctx context.Context, s *Status)

func (f statusFunc) status(ctx context.Context, s *Status) { f(ctx, s) }

// status gathers the status of this edge now, from every module that shows something.
func (e *edge) status(ctx context.Context) Status {
	var s Status
	for _, m := range e.modules {
		if m.status != nil {
			m.status.status(ctx, &s)
		}
	}
	slices.SortStableFunc(s.Certificates, func(a, b CertStatus) int { return certOrder(a.Source) - certOrder(b.Source) })
	return s
}

// certOrder lists the certificates as the status page always has: the static one, the internal
// listener's, then those ACME manages.
func certOrder(source string) int {
	switch source {
	case "tls.static":
		return 0
	case "internal.tls":
		return 1
	}
	return 2
}

// fleetLimit bounds how many agents the fleet view lists.
const fleetLimit = 1000

// appendCert adds a certificate of source to out; nil or unreadable: nothing.
func appendCert(out []CertStatus, source string, c *tls.Certificate, now time.Time) []CertStatus {
	if c == nil || len(c.Certificate) == 0 {
		return out
	}
	leaf := c.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return out
		}
	}
	names := leaf.DNSNames
	if len(names) == 0 {
		names = []string{leaf.Subject.CommonName}
	}
	return append(out, CertStatus{Source: source, Names: names, NotAfter: leaf.NotAfter.UTC(),
		ExpiresIn: leaf.NotAfter.Sub(now).Round(time.Hour).String()})
}
