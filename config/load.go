package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
)

// Load reads the config file at path, with files it names relative to path's directory. A bad
// config gives Problems (use errors.As) listing every problem; a file that cannot be read at all
// gives the wrapped os error.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(data, path, filepath.Dir(path))
}

// Parse decodes data strictly, fills in defaults, reads the secret and key files it names
// (relative to baseDir, made absolute in the config) and validates the whole. file names the
// config in problems. A bad config gives Problems, listing every problem, sorted by line.
func Parse(data []byte, file, baseDir string) (*Config, error) {
	c, err := parseConfig(data, file, baseDir)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// parseConfig is Parse, but the config it decoded comes along with its Problems (nil when the
// file is not YAML or its directory has no absolute path).
func parseConfig(data []byte, file, baseDir string) (*Config, error) {
	ch := newChecker(file, nil)
	c := Default()
	c.File = file
	c.lines = ch.lines
	if root := parseDocument(data, ch); root != nil {
		(&decoder{ch: ch}).decode(root, reflect.ValueOf(c).Elem(), "")
	} else if len(ch.problems) > 0 {
		return nil, ch.err() // a file that is not YAML has nothing more worth saying
	}
	c.applyAbsent()
	abs, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, fmt.Errorf("config directory %s: %w", baseDir, err)
	}
	c.readFiles(&files{baseDir: abs, ch: ch})
	c.validate(ch)
	return c, ch.err()
}

func (c *Config) readFiles(f *files) {
	j := &c.Tokens.JobJWT
	f.keys("tokens.job_jwt.keys", j.Keys)
	j.JWKS = f.read("tokens.job_jwt.jwks_file", &j.JWKSFile)
	c.Internal.Secret = f.secret("internal.secret_file", &c.Internal.SecretFile)
	if t := c.Internal.TLS; t != nil {
		t.CertPEM = f.read("internal.tls.cert_file", &t.CertFile)
		t.KeyPEM = f.read("internal.tls.key_file", &t.KeyFile)
	}
	c.Internal.CA = f.read("internal.ca_file", &c.Internal.CAFile)
	f.keys("agents.keys", c.Agents.Keys)
	if c.TLS != nil {
		c.TLS.readFiles(f)
	}
	if c.Registry != nil {
		c.Registry.Redis.Password = f.secret("registry.redis.password_file", &c.Registry.Redis.PasswordFile)
	}
	if g := c.GitLabAPI; g != nil {
		g.Secret = f.secret("gitlab_api.secret_file", &g.SecretFile)
	}
	if c.Workspaces != nil {
		c.Workspaces.readFiles(f)
	}
	if c.Aggregation != nil {
		c.Aggregation.readFiles(f)
	}
	if a := c.Runners.Admission; a != nil {
		a.readFiles(f)
	}
}

// applyAbsent sets the defaults that depend on what the file leaves out, which only Parse knows
// (from the paths it decoded): a code-built config keeps what its code set.
func (c *Config) applyAbsent() {
	if _, ok := c.lines["tokens.job_jwt"]; !ok {
		// No section: the job-JWT rule is off, not "route on unverified claims".
		c.Tokens.JobJWT.Enabled, c.Tokens.JobJWT.Verify = false, false
	}
	if r := c.Registry; r != nil && r.TTL.Duration > 0 {
		if _, ok := c.lines["registry.refresh"]; !ok {
			r.Refresh.Duration = r.TTL.Duration - r.TTL.Duration/5 // 4/5 of ttl, without overflow
		}
	}
}
