package config

import "time"

// Agents configures how agent tokens are verified (aud edge-agent), how long a request waits
// for an agent to connect, and how many connections one agent may hold at this edge.
type Agents struct {
	Keys   []KeyRef `yaml:"keys"`   // public keys or HMAC secrets (at least 32 bytes)
	Issuer string   `yaml:"issuer"` // empty: iss not checked
	Leeway Duration `yaml:"leeway"` // clock skew allowed on exp and nbf
	Wait   Duration `yaml:"wait"`
	// MaxConnections bounds one agent id's tunnel connections at this edge, those still in their
	// handshake included (default 10); more are refused with 429. A reload applies it to new
	// connects.
	MaxConnections int `yaml:"max_connections"`
}

// GitLabAPI is the API for GitLab under /-/api/v1/, authenticated by an HS256 JWT.
type GitLabAPI struct {
	SecretFile string `yaml:"secret_file"` // made absolute by Parse
	Secret     []byte `yaml:"-"`           // the file's contents, trimmed; at least 32 bytes
	Issuer     string `yaml:"issuer"`
	Audience   string `yaml:"audience"`
}

func (g *GitLabAPI) setDefaults() {
	g.Issuer = "gitlab"
	g.Audience = "gitlab-kas"
}

// DefaultGitLabAPI returns a gitlab_api section with its defaults (no secret).
func DefaultGitLabAPI() *GitLabAPI {
	g := &GitLabAPI{}
	g.setDefaults()
	return g
}

func (c *Config) validateAgents(ch *checker) {
	checkKeys(ch, "agents.keys", c.Agents.Keys, keyRules{allowHMAC: true})
	positive(ch, "agents.wait", c.Agents.Wait)
	if c.Agents.MaxConnections < 1 {
		ch.add("agents.max_connections", "must be at least 1")
	}
	if c.Agents.Leeway.Duration < 0 {
		ch.add("agents.leeway", "must not be negative")
	} else if c.Agents.Leeway.Duration > 5*time.Minute {
		ch.add("agents.leeway", "must be at most 5m")
	}
	if g := c.GitLabAPI; g != nil {
		checkSecret(ch, "gitlab_api.secret_file", g.SecretFile, g.Secret, true, ": the HS256 secret GitLab signs its JWTs with")
		if g.Issuer == "" {
			ch.add("gitlab_api.issuer", "must not be empty")
		}
		if g.Audience == "" {
			ch.add("gitlab_api.audience", "must not be empty")
		}
	}
}
