package registry

import (
	"context"
	"time"
)

// ConnInfo describes one agent connection (one tunnel) held by one edge instance: what the API
// for GitLab lists per connection. The JSON names are part of the API and of the Redis layout.
type ConnInfo struct {
	AgentID      string    `json:"agent_id"`
	ProjectID    string    `json:"project_id,omitempty"`
	ConnectionID string    `json:"connection_id"`
	Version      string    `json:"version"`
	Commit       string    `json:"commit"`
	PodNamespace string    `json:"pod_namespace"`
	PodName      string    `json:"pod_name"`
	ConnectedAt  time.Time `json:"connected_at"`
	// Edge is the holding instance's advertise_internal URL. The registry sets it: Register stamps
	// its own URL, lookups the URL the entry is stored under.
	Edge string `json:"edge"`
	// Splice: the holder takes splice opens for this connection (its agent splices), so another
	// edge may send it bytes instead of requests. Not part of the API for GitLab.
	Splice bool `json:"splice,omitempty"`
}

// Registerer is the side of the registry the tunnel server uses.
type Registerer interface {
	// Register records that this edge now holds connection c. The local truth is kept even when
	// the shared store cannot be written (the error wraps ErrUnavailable, for the caller
	// to log): the run loop writes it again when the store is back.
	Register(ctx context.Context, c ConnInfo) error
	// Unregister records that connection c ended. The store write is delayed by the registry's
	// UnregisterDelay so that an agent reconnecting at once does not flap for other edges; a later
	// Register of the same agent within the delay keeps its entry in place.
	Unregister(ctx context.Context, c ConnInfo) error
}

// Querier is the side of the registry the request path uses. No method holds a lock the
// registerer side holds across store I/O.
type Querier interface {
	// Lookup returns every live connection of agentID on any edge. This edge's own connections
	// come from its local truth. When the store cannot be reached the error wraps
	// ErrUnavailable and the result still holds this edge's own connections.
	Lookup(ctx context.Context, agentID string) ([]ConnInfo, error)
	// ByProject returns every live connection of the agents whose token names projectID.
	ByProject(ctx context.Context, projectID string) ([]ConnInfo, error)
	// Wait returns as soon as agentID has at least one connection, or fails when ctx ends. All
	// waiters for one agent in this process share one wait loop, woken by connect events and,
	// as a safety net, by a slow poll with backoff. When ctx ends the error wraps ctx.Err(), and
	// also ErrUnavailable if the store could not be read on the last attempt.
	Wait(ctx context.Context, agentID string) ([]ConnInfo, error)
	// Forget removes connection stale (AgentID, ConnectionID, Edge) from the store after its
	// holder answered "not here". It changes the entry only if it still lists that connection,
	// atomically, so a connection the holder registered since stays. A holder that still believes
	// it holds the connection writes it back, at its next refresh or when its health probe finds
	// its entry gone. Forgetting one of this edge's
	// own connections does nothing: its local truth wins.
	Forget(ctx context.Context, stale ConnInfo) error
}

// Registry says which edge instance holds which agent.
type Registry interface {
	Registerer
	Querier
	// Run refreshes this edge's entries before they expire, rewrites all of them after a failed
	// write or when the store comes back, collects its own expired entries and listens for connect
	// events. It returns nil when ctx ends; entries are not removed then (see Drain), so a crashed
	// and a stopped edge look the same: their entries expire after the TTL.
	Run(ctx context.Context) error
	// Drain removes all of this edge's entries at once (no debounce), refuses later Register calls
	// and ends every Wait with ErrDraining. For shutdown.
	Drain(ctx context.Context) error
	// Healthy reports whether the last store operation succeeded.
	Healthy() bool
	// List returns the live connections of up to limit agents on any edge (this edge's own
	// included even when the store cannot be read), for the status page.
	List(ctx context.Context, limit int) ([]ConnInfo, error)
}
