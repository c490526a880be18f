package tokens

import "time"

// MintAgentOptions describes an agent token to mint (for tests, tools and the demo; real agent
// tokens are issued by GitLab).
type MintAgentOptions struct {
	Key              any // *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey, or []byte for HS*
	Algorithm        string
	KID              string // put in the header when non-empty
	Issuer, Audience string // omitted when empty
	AgentID          string // omitted when empty (for negative tests)
	ProjectID        string // omitted when empty
	IssuedAt         time.Time
	ExpiresAt        time.Time      // zero means no exp claim (for negative tests)
	Extra            map[string]any // extra claims, set last (may override the above; for negative tests)
}

// MintAgentToken signs an agent token. It does not check AgentID or ProjectID, so negative tests
// can mint malformed ones.
func MintAgentToken(o MintAgentOptions) (string, error) {
	claims := registeredClaims(o.Issuer, o.Audience, o.IssuedAt, o.ExpiresAt)
	if o.AgentID != "" {
		claims["agent_id"] = o.AgentID
	}
	if o.ProjectID != "" {
		claims["project_id"] = o.ProjectID
	}
	for name, v := range o.Extra {
		claims[name] = v
	}
	return signJWT("agent token", o.Algorithm, o.Key, o.KID, claims)
}
