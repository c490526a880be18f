package tokens

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	// DefaultAgentAudience is the aud of agent tokens unless configured otherwise.
	DefaultAgentAudience = "edge-agent"
	// DefaultAgentLeeway is the clock skew allowed on agent tokens unless configured otherwise.
	DefaultAgentLeeway = 30 * time.Second
)

// AgentIdentity is who a verified agent token says the agent is.
type AgentIdentity struct {
	AgentID   string
	ProjectID string // empty when the token names no project
	ExpiresAt time.Time
}

// AgentVerifierOptions configures an AgentVerifier.
type AgentVerifierOptions struct {
	Keys     []Key            // public keys (RS*, PS*, ES*, EdDSA) and/or HMAC secrets (HS*, Public = []byte)
	Issuer   string           // required match when non-empty
	Audience string           // empty means DefaultAgentAudience
	Leeway   time.Duration    // clock skew allowed on exp, nbf and iat; 0 means DefaultAgentLeeway
	Now      func() time.Time // nil means time.Now
}

// AgentVerifier checks the tokens agents present when they connect. It is safe for concurrent use.
type AgentVerifier struct {
	check  jwtCheck
	parser *jwt.Parser
}

// NewAgentVerifier checks the options and builds an AgentVerifier.
func NewAgentVerifier(o AgentVerifierOptions) (*AgentVerifier, error) {
	if o.Leeway < 0 {
		return nil, errors.New("agent token verifier: negative leeway")
	}
	if o.Audience == "" {
		o.Audience = DefaultAgentAudience
	}
	if o.Leeway == 0 {
		o.Leeway = DefaultAgentLeeway
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	check, err := newJWTCheck(o.Keys, o.Issuer, o.Audience, o.Leeway)
	if err != nil {
		return nil, fmt.Errorf("agent token verifier: %w", err)
	}
	return &AgentVerifier{check: check, parser: check.parser(o.Now)}, nil
}

// Verify checks an agent token (the bare JWT): signature with the key its kid names (or the only
// key when there is no kid) and that key's algorithm, exp required, nbf and iat honoured, aud and
// (when configured) iss checked, agent_id present and well formed, project_id well formed when
// present. Failures wrap ErrInvalidJWT and, where one fits, a more specific sentinel (ErrBadClaim
// for agent_id or project_id); a done ctx returns ctx.Err().
func (v *AgentVerifier) Verify(ctx context.Context, token string) (AgentIdentity, error) {
	if err := ctx.Err(); err != nil {
		return AgentIdentity{}, err
	}
	var c agentClaimsJSON
	if err := v.check.parse(v.parser, token, &c, &c.RegisteredClaims); err != nil {
		return AgentIdentity{}, err
	}
	if !c.AgentID.set {
		return AgentIdentity{}, fmt.Errorf("%w: %w: no agent_id", ErrInvalidJWT, ErrBadClaim)
	}
	return AgentIdentity{AgentID: c.AgentID.v, ProjectID: c.ProjectID.v, ExpiresAt: c.ExpiresAt.Time}, nil
}

type agentClaimsJSON struct {
	jwt.RegisteredClaims
	AgentID   idClaim `json:"agent_id"`
	ProjectID idClaim `json:"project_id"`
}
