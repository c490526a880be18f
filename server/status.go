package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"slices"
	"strings"
	"time"

	"gitlab.com/edge/edge/aggregate"
	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/front"
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

// fleetLimit bounds how many agents the fleet view lists.
const fleetLimit = 1000

// status gathers the status of this edge now.
func (e *edge) status(ctx context.Context) Status {
	now := time.Now()
	s := Status{Edge: e.reload.edgeStatus(now), Refusals: e.front.Refusals()}
	s.Edge.Draining = e.health.draining.Load()
	legacy := map[uint64]bool{}
	for _, c := range e.reload.config().Cells {
		legacy[c.ID] = c.Legacy
	}
	s.Cells = e.runner.cellStatus(legacy)
	for _, c := range e.agents.tunnels.Conns() {
		i := c.Info()
		s.AgentsHere = append(s.AgentsHere, AgentStatus{AgentID: i.AgentID, ConnectionID: i.ConnectionID, Since: i.ConnectedAt.UTC(), Version: i.Version})
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	fleet, err := e.agents.registry.List(ctx, fleetLimit)
	if err != nil {
		s.FleetError = err.Error()
	}
	peers := map[string]bool{}
	for _, c := range fleet {
		s.Fleet = append(s.Fleet, AgentStatus{AgentID: c.AgentID, ConnectionID: c.ConnectionID, Edge: c.Edge, Since: c.ConnectedAt.UTC(), Version: c.Version})
		if c.Edge != "" && c.Edge != e.agents.self {
			peers[c.Edge] = true
		}
	}
	slices.SortFunc(s.Fleet, func(a, b AgentStatus) int { return strings.Compare(a.AgentID+a.ConnectionID, b.AgentID+b.ConnectionID) })
	for p := range peers {
		s.Peers = append(s.Peers, p)
	}
	slices.Sort(s.Peers)
	s.Aggregation = e.aggregation.memberStatus()
	s.Certificates = e.certificates(now)
	return s
}

func (r *runner) cellStatus(legacy map[uint64]bool) []CellStatus {
	cells := r.health.InForce()
	slices.SortFunc(cells, func(a, b *discovery.CellHealth) int { return int(a.ID) - int(b.ID) })
	out := make([]CellStatus, 0, len(cells))
	for _, c := range cells {
		recent := c.Recent()
		out = append(out, CellStatus{ID: c.ID, Legacy: legacy[c.ID], Up: c.Up(), Degraded: c.Degraded(), Checked: c.Checked(),
			Addresses: c.State(), Recent: recent, P50: recent.P50.String(), P99: recent.P99.String()})
	}
	return out
}

func (g *aggregation) memberStatus() []MemberStatus {
	if g.watches == nil {
		return nil
	}
	open, last := g.watches.Open(), g.metrics.Last()
	var out []MemberStatus
	for _, m := range g.members {
		out = append(out, MemberStatus{Name: m.Name, Server: m.Server, OpenWatches: open[m.Name], Last: last[m.Name]})
	}
	return out
}

// certificates are the public listener's (static or ACME) and the internal listener's.
func (e *edge) certificates(now time.Time) []CertStatus {
	var out []CertStatus
	add := func(source string, c *tls.Certificate) {
		if c == nil || len(c.Certificate) == 0 {
			return
		}
		leaf := c.Leaf
		if leaf == nil {
			var err error
			if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
				return
			}
		}
		names := leaf.DNSNames
		if len(names) == 0 {
			names = []string{leaf.Subject.CommonName}
		}
		out = append(out, CertStatus{Source: source, Names: names, NotAfter: leaf.NotAfter.UTC(),
			ExpiresIn: leaf.NotAfter.Sub(now).Round(time.Hour).String()})
	}
	add("tls.static", e.tls.static.Load())
	if t := e.agents.internalTLS; t != nil {
		add("internal.tls", &t.Certificates[0])
	}
	if m := e.tls.acme; m != nil && m.cache != nil {
		for _, d := range m.domains {
			for _, c := range m.cache.AllMatchingCertificates(d) {
				add("tls.acme", &c.Certificate)
			}
		}
	}
	return out
}
