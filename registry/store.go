package registry

import (
	"context"
	"time"
)

// store is the shared part of the registry: memory for one instance (or tests of several),
// Redis for several. It keeps, per agent, one entry per holding edge, each with its own expiry,
// and a per-project index of agent ids.
type store interface {
	// write replaces edge's entry of each agent with u.conns (none: the entry is removed),
	// marks u.projectIDs as having that agent, and, when publish is set, announces each agent
	// that has connections on the connect-event channel.
	write(ctx context.Context, edge string, ups []agentUpdate, expiresAt time.Time, publish bool) error
	// agents returns the live entries of each agent, by edge, dropping expired ones from the store.
	agents(ctx context.Context, agentIDs []string) (map[string]map[string][]ConnInfo, error)
	// agentIDs returns the ids of up to limit agents that have entries (live or not yet cleaned).
	agentIDs(ctx context.Context, limit int) ([]string, error)
	// project returns the ids of the agents whose live index entries name projectID.
	project(ctx context.Context, projectID string) ([]string, error)
	// forget removes stale.ConnectionID from stale.Edge's entry of stale.AgentID, if still there.
	forget(ctx context.Context, stale ConnInfo) error
	// probe checks that the store answers and, unless agentID is "", whether it still has
	// edge's entry of agentID.
	probe(ctx context.Context, edge, agentID string) (present bool, err error)
	// subscribe calls onEvent for each connect event and onSubscribed each time the subscription
	// is (re)established, so waiters can look again after a gap; it returns when ctx ends.
	subscribe(ctx context.Context, onEvent func(agentID string), onSubscribed func())
}

// agentUpdate is what this edge holds of one agent, as of generation gen.
type agentUpdate struct {
	agentID    string
	projectIDs []string
	conns      []ConnInfo
	gen        uint64
}

// edgeEntry is the value of field <edge> in <prefix>:v1:agent:<agent_id>.
type edgeEntry struct {
	ExpiresAt   int64      `json:"expires_at"`
	Connections []ConnInfo `json:"connections"`
}

// projectEntry is the value of field <agent_id> in <prefix>:v1:project:<project_id>.
type projectEntry struct {
	ExpiresAt int64 `json:"expires_at"`
}

// unixCeil rounds up to whole seconds, so an entry never looks expired before its TTL.
func unixCeil(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

func expired(expiresAt int64, now time.Time) bool {
	return !now.Before(time.Unix(expiresAt, 0))
}
