package agentrouter

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/registry"
)

// InternalVerifier checks the JWT one edge presents to another, bound to the agent id.
type InternalVerifier interface {
	Verify(token, agentID string, now time.Time) error
}

// GitLabAPIVerifier checks the JWT GitLab presents to the API for GitLab.
type GitLabAPIVerifier interface {
	Verify(token string, now time.Time) error
}

// InternalHandler serves the internal listener: requests another edge forwards to the agent
// this edge holds. It follows the routing headers and does no discovery of its own, so a
// request can never loop; when the tunnel is gone it answers 421 for the entry edge to retry.
func (a *AgentRouter) InternalHandler(v InternalVerifier) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		splice := r.Header.Get(HeaderSplicePort) != ""
		t, err := internalTarget(r, v, splice)
		if err != nil {
			a.metrics.internal.WithLabelValues("refused").Inc()
			hop.Error(w, err)
			return
		}
		if splice {
			a.serveSplice(w, r, t)
			return
		}
		rt := a.localTransport(t)
		if rt == nil {
			a.notHere(w, t)
			return
		}
		// The entry edge asked for a 100 Continue to hear "not here" before it sends the body
		// (rewriteRemote); this edge's server answers as the body is read. Passed on, the
		// expectation would hold the body back a second from an upstream that sends no 100.
		r.Header.Del("Expect")
		at := &attempt{target: t, local: rt}
		a.serve(w, r, at, a.local)
		if errors.Is(at.err, errNotHere) {
			a.notHere(w, t)
			return
		}
		a.metrics.internal.WithLabelValues("served").Inc()
	})
}

func (a *AgentRouter) notHere(w http.ResponseWriter, t AgentTarget) {
	a.metrics.internal.WithLabelValues("not_here").Inc()
	w.Header().Set(hop.HeaderNotHere, "1")
	hop.Write(w, http.StatusMisdirectedRequest, "not_here", "agent "+t.AgentID+" is not connected to this edge")
}

// internalTarget reads and checks the routing headers and the internal JWT; a splice open names
// its port in HeaderSplicePort.
func internalTarget(r *http.Request, v InternalVerifier, splice bool) (AgentTarget, error) {
	t := AgentTarget{AgentID: r.Header.Get(hop.HeaderAgentID), ConnectionID: r.Header.Get(hop.HeaderConnectionID), Path: r.URL.Path, RawPath: r.URL.RawPath}
	if t.AgentID == "" {
		return t, fmt.Errorf("%w: no %s header", hop.ErrBadRequest, hop.HeaderAgentID)
	}
	if err := checkID("agent id", t.AgentID); err != nil {
		return t, err
	}
	token, ok := hop.Bearer(r.Header.Get("Authorization"))
	if !ok {
		return t, fmt.Errorf("%w: no internal token", hop.ErrUnauthorized)
	}
	if err := v.Verify(token, t.AgentID, time.Now()); err != nil {
		return t, fmt.Errorf("%w: %w", hop.ErrUnauthorized, err)
	}
	hops, err := strconv.Atoi(r.Header.Get(hop.HeaderHop))
	switch {
	case err != nil || hops < 1:
		return t, fmt.Errorf("%w: %s must be a positive hop count", hop.ErrBadRequest, hop.HeaderHop)
	case hops > 1:
		return t, fmt.Errorf("%w: %d hops, at most 1", hop.ErrHopLimit, hops)
	}
	portHeader := hop.HeaderPort
	if splice {
		portHeader = HeaderSplicePort
	}
	if t.Port, err = parsePort(r.Header.Get(portHeader)); err != nil {
		return t, err
	}
	return t, nil
}

func parsePort(s string) (int, error) {
	port, err := strconv.Atoi(s)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("%w: port %q is not 1-65535", hop.ErrBadRequest, s)
	}
	return port, nil
}

func (a *AgentRouter) writeConnections(w http.ResponseWriter, conns []registry.ConnInfo, err error) {
	if err != nil {
		a.fail(w, nil, AgentTarget{}, fmt.Errorf("%w: %w", hop.ErrRegistryDown, err))
		return
	}
	// A copy: conns may be the registry's cached answer. Splice is between edges only.
	conns = slices.Clone(conns)
	if conns == nil {
		conns = []registry.ConnInfo{}
	}
	for i := range conns {
		conns[i].Splice = false
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(struct {
		Connections []registry.ConnInfo `json:"connections"`
	}{conns})
}
