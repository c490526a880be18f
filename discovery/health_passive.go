package discovery

import "time"

// Passive health: what requests tell of an address. Evidence that a request never reached the
// address (a refused or timed-out connect) is about the address and ejects it at once. A reset or
// EOF after the request went out may be the request's own doing (a handler that panics on it, a
// worker killed while serving it), so one client could eject a healthy address with it; it ejects
// only after DefaultGatewayFailures in a row, and an answer of any status ends the streak. No
// passive evidence takes a cell's last address out (Pick): only active checks make edge answer
// 503 cell_unavailable without a dial.

// DefaultGatewayFailures is how many gateway failures in a row eject an address unless
// HealthOptions say otherwise: Envoy's consecutive_gateway_failure default.
const DefaultGatewayFailures = 5

// Ejection back-off: an ejection takes an address out for ejectBase, doubled for each further
// ejection in a row up to ejectMax; an answer or a passing check ends the streak.
const (
	ejectBase = time.Second
	ejectMax  = 30 * time.Second
)

// Evidence is what ejected an address.
type Evidence int32

const (
	_               Evidence = iota // none
	EvidenceConnect                 // a connect refused or timed out: the request never reached the address
	EvidenceGateway                 // resets or EOFs after requests went out, DefaultGatewayFailures in a row
	evidenceKinds
)

// String is the evidence as the metric's label, the log and the status page name it.
func (e Evidence) String() string {
	switch e {
	case EvidenceConnect:
		return "connect"
	case EvidenceGateway:
		return "gateway"
	}
	return ""
}

// ConnectFailed records a connect to the address that was refused or timed out: the address is
// ejected at once.
func (c *CellHealth) ConnectFailed(a *Address) { c.eject(a, EvidenceConnect) }

// GatewayFailed records a reset or EOF after the request went out and before any answer: the
// address is ejected when it is the gatewayLimit-th in a row. The failures of requests in
// flight when it was ejected do not count.
func (c *CellHealth) GatewayFailed(a *Address) {
	if a.ejectedNow() || a.gateway.Add(1) < c.gatewayLimit {
		return
	}
	a.gateway.Store(0)
	c.eject(a, EvidenceGateway)
}

// eject takes the address out for a back-off that grows while ejections follow one another with
// no answer between. The failures of requests that were in flight together count once: an
// address already out stays out as long as it was.
func (c *CellHealth) eject(a *Address, e Evidence) {
	now := time.Now().UnixNano()
	was := a.ejected.Load()
	if was > now {
		return
	}
	n := a.ejections.Load() + 1
	backoff := ejectMax
	if n <= 6 {
		backoff = min(ejectBase<<(n-1), ejectMax)
	}
	if !a.ejected.CompareAndSwap(was, now+int64(backoff)) {
		return // another failure ejected it just now
	}
	a.ejections.Store(n)
	a.ejectedBy.Store(int32(e))
	c.ejections[e].Inc()
	if e == EvidenceGateway {
		c.log.Warn("cell address ejected: gateway failures in a row", "cell", c.ID, "address", a.label,
			"evidence", e.String(), "gateway_failures_in_a_row", c.gatewayLimit, "ejections_in_a_row", n, "for", backoff)
		return
	}
	c.log.Warn("cell address ejected: a connect failed", "cell", c.ID, "address", a.label,
		"evidence", e.String(), "ejections_in_a_row", n, "for", backoff)
}
