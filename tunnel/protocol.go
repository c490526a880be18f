package tunnel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

const (
	// ConnectPath is where agents connect, below the edge's base URL.
	ConnectPath = "/-/agent/connect"
	// UpgradeToken is the protocol named in the Upgrade header.
	UpgradeToken = "edge-tunnel"
	// TCPUpgradeToken asks the agent, on a request through the tunnel, for a raw TCP stream to
	// the upstream port instead of an HTTP exchange (SSH to a workspace's sshd).
	TCPUpgradeToken = "edge-tcp"
	// SpliceUpgradeToken asks the agent for a raw TCP stream to the upstream port that the edge
	// then uses as a keep-alive connection to that upstream: the edge's requests pass through the
	// agent as bytes, parsed by nobody on the way (see Conn and Server.Splice).
	SpliceUpgradeToken = "edge-splice"
	// FeatureSplice, in AgentInfo.Features, says the agent takes SpliceUpgradeToken streams.
	FeatureSplice = "splice"
	// InfoHeader carries the agent's AgentInfo as JSON on the connect request.
	InfoHeader = "Edge-Agent-Info"
	// ConnectionIDHeader carries the edge's id for the connection on the 101 answer.
	ConnectionIDHeader = "Edge-Connection-Id"
	// PortHeader names the agent's upstream port on a request sent through the tunnel.
	PortHeader = "Edge-Port"

	// DefaultStreamWindow is each side's yamux receive window per stream. yamux's default (256 KiB)
	// caps a stream at about window/RTT: 12 MB/s at 10 ms in bench/tunnel; 1 MiB gives 100 MB/s at
	// 10 ms. A stream's receive buffer grows up to the window only while its reader lags, and is
	// kept while the stream idles for reuse: yamux clears every buffer it allocates, and growing
	// one again for each large body cost half of the throughput (go test -bench 10MiB ./tunnel/).
	DefaultStreamWindow = 1 << 20
	// DefaultMaxIdleStreams is how many idle streams per connection the edge keeps for reuse. It
	// must cover the usual concurrency: a stream opened per request costs a new HTTP connection
	// on both ends (with 8, 50 concurrent clients got 0.39x the plain proxy's requests/s; with 64,
	// 0.53x). An idle stream holds at most a window of memory, and only if its last reader lagged.
	DefaultMaxIdleStreams = 64
	// DefaultKeepAlive is the interval of yamux pings that detect a dead peer.
	DefaultKeepAlive = 20 * time.Second
	// DefaultMaxStreamsPerAgent bounds requests in flight per agent, and so the memory their
	// windows may hold.
	DefaultMaxStreamsPerAgent = 1000
	// DefaultHandshakeTimeout is how long the edge waits after the 101 for the agent's control
	// stream; an agent opens it at once.
	DefaultHandshakeTimeout = 5 * time.Second
	// DefaultMaxConnectionsPerAgent bounds one agent id's connections at one edge (an agent keeps
	// AgentOptions.Connections up, one more during a handover).
	DefaultMaxConnectionsPerAgent = 10

	maxInfoField   = 253
	maxFeatures    = 8
	maxFeature     = 32
	maxInfoHeader  = 4096 // above the longest valid info encoded
	maxErrorBody   = 4096
	maxControlLine = 4096
)

// AgentInfo is what an agent says about itself when it connects, as GitLab kas's AgentMeta, and
// which of the protocol's optional parts it takes (Features; an edge uses none an agent does not
// name, so older agents keep working).
type AgentInfo struct {
	Version      string   `json:"version,omitempty"`
	Commit       string   `json:"commit,omitempty"`
	PodNamespace string   `json:"pod_namespace,omitempty"`
	PodName      string   `json:"pod_name,omitempty"`
	Features     []string `json:"features,omitempty"`
}

// Has tells whether the agent named feature (FeatureSplice).
func (i AgentInfo) Has(feature string) bool { return slices.Contains(i.Features, feature) }

func (i AgentInfo) validate() error {
	if len(i.Features) > maxFeatures {
		return fmt.Errorf("more than %d features", maxFeatures)
	}
	for _, f := range i.Features {
		if f == "" || len(f) > maxFeature || strings.TrimLeft(f, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return fmt.Errorf("feature %q: want 1 to %d of [a-z0-9_-]", f, maxFeature)
		}
	}
	for name, v := range map[string]string{"version": i.Version, "commit": i.Commit, "pod_namespace": i.PodNamespace, "pod_name": i.PodName} {
		if len(v) > maxInfoField {
			return fmt.Errorf("%s longer than %d bytes", name, maxInfoField)
		}
		for _, r := range v {
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("%s has a control character", name)
			}
		}
	}
	return nil
}

func (i AgentInfo) header() (string, error) {
	if err := i.validate(); err != nil {
		return "", fmt.Errorf("tunnel: agent info: %w", err)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(i); err != nil {
		return "", fmt.Errorf("tunnel: agent info: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func parseInfoHeader(h string) (AgentInfo, error) {
	var info AgentInfo
	if h == "" {
		return info, nil
	}
	if len(h) > maxInfoHeader {
		return info, fmt.Errorf("%s longer than %d bytes", InfoHeader, maxInfoHeader)
	}
	if err := json.Unmarshal([]byte(h), &info); err != nil {
		return info, fmt.Errorf("%s: %w", InfoHeader, err)
	}
	if err := info.validate(); err != nil {
		return info, fmt.Errorf("%s: %w", InfoHeader, err)
	}
	if len(info.Features) == 0 {
		info.Features = nil
	}
	return info, nil
}

// isUpgrade tells whether r asks to switch to the tunnel protocol.
func isUpgrade(h http.Header) bool {
	return headerHasToken(h, "Connection", "upgrade") && headerHasToken(h, "Upgrade", UpgradeToken)
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
