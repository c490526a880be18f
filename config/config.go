// Package config reads, defaults and validates edge's YAML config file. Every problem is reported
// with its path and line, all of them at once; secrets and keys are read from files named relative
// to the config file.
package config

import (
	"net/netip"
	"time"
)

// Config is a whole edge config. Sections that are optional features are pointers, nil when absent.
type Config struct {
	File        string       `yaml:"-"` // the config file as given to Load or Parse
	Listen      Listen       `yaml:"listen"`
	TLS         *TLS         `yaml:"tls"`
	Cells       []Cell       `yaml:"cells"`
	Health      *HealthCheck `yaml:"health"` // defaults of cells[].health; nil: cells without their own are not checked
	Runners     Runners      `yaml:"runners"`
	Routing     Routing      `yaml:"routing"`
	Limits      Limits       `yaml:"limits"`
	Tokens      Tokens       `yaml:"tokens"`
	Registry    *Registry    `yaml:"registry"` // nil: the in-memory registry (one instance)
	Internal    Internal     `yaml:"internal"`
	Agents      Agents       `yaml:"agents"`
	GitLabAPI   *GitLabAPI   `yaml:"gitlab_api"`
	Workspaces  *Workspaces  `yaml:"workspaces"`
	Aggregation *Aggregation `yaml:"aggregation"`
	Shutdown    Shutdown     `yaml:"shutdown"`
	Log         Log          `yaml:"log"`
	Tracing     *Tracing     `yaml:"tracing"` // nil: no traces

	lines map[string]int // path -> line, from Parse, so Validate can place its problems
}

type Listen struct {
	Public            string `yaml:"public"`             // runners, browsers, agents
	Ops               string `yaml:"ops"`                // /metrics, /healthz, /readyz
	Internal          string `yaml:"internal"`           // edge-to-edge; needed with a registry
	AdvertiseInternal string `yaml:"advertise_internal"` // URL other edges reach Internal at
	SSH               string `yaml:"ssh"`                // SSH into workspaces; empty: off
	// HTTP1 is who reads HTTP/1.1 on listen.public: "edge" (edge's own engine, handing what it
	// does not read to net/http; the default) or "net/http" (net/http alone).
	HTTP1 string `yaml:"http1"`
}

// HTTP1 engines.
const (
	HTTP1Edge    = "edge"
	HTTP1NetHTTP = "net/http"
)

type Cell struct {
	ID       uint64    `yaml:"id"`
	URL      string    `yaml:"url"`
	URLs     []string  `yaml:"urls"` // several addresses of one cell, instead of url
	Legacy   bool      `yaml:"legacy"`
	IDRanges []string  `yaml:"id_ranges"`
	Ranges   []IDRange `yaml:"-"` // parsed from IDRanges by Validate
	// PreserveHost: whether the cell sees the client's Host header (nil: yes; see KeepsHost).
	PreserveHost *bool `yaml:"preserve_host"`
	// Health is the cell's own active check over the top-level health block (see CellHealth).
	Health *HealthCheck `yaml:"health"`
}

// KeepsHost tells whether requests reach the cell with the Host header the client sent, rather
// than the host of the cell's URL. The default is yes: a GitLab cell is configured with the
// platform's external URL, and Rails builds redirects and absolute URLs from the request's Host
// and checks a browser's Origin against it (CSRF), so the cell must see the name the client used.
// preserve_host: false is for a backend that routes by its own name (virtual hosting).
func (c Cell) KeepsHost() bool { return c.PreserveHost == nil || *c.PreserveHost }

// IDRange is an inclusive range of database ids ("2000000-3999999") owned by one cell.
type IDRange struct{ Lo, Hi uint64 }

func (r IDRange) Contains(id uint64) bool { return r.Lo <= id && id <= r.Hi }

type Routing struct {
	ClassifyURL     string      `yaml:"classify_url"`
	ClassifyTimeout Duration    `yaml:"classify_timeout"`
	BodyTokenLimit  ByteSize    `yaml:"body_token_limit"`
	LongPollTimeout Duration    `yaml:"long_poll_timeout"` // upstream timeout for POST /api/v4/jobs/request
	UpstreamTimeout Duration    `yaml:"upstream_timeout"`  // response-header timeout for other runner routes
	DialTimeout     Duration    `yaml:"dial_timeout"`
	TrustedProxies  []string    `yaml:"trusted_proxies"` // CIDRs; a bare IP is a /32 or /128
	LearnedJobs     LearnedJobs `yaml:"learned_jobs"`

	TrustedPrefixes []netip.Prefix `yaml:"-"` // parsed from TrustedProxies by Validate
}

type LearnedJobs struct {
	Size int      `yaml:"size"`
	TTL  Duration `yaml:"ttl"`
}

type Limits struct {
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	MaxHeaderBytes    ByteSize `yaml:"max_header_bytes"`
	IdleTimeout       Duration `yaml:"idle_timeout"`
	MaxConnections    int      `yaml:"max_connections"` // 0: unlimited
}

// Shutdown.Grace is how long in-flight requests and long polls may finish after SIGTERM.
type Shutdown struct {
	Grace Duration `yaml:"grace"`
}

type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // json, text
	Access *bool  `yaml:"access"` // one line per request at info; nil: yes (see AccessLog)
}

// AccessLog tells whether each request is logged (a line at info when it is answered).
func (l Log) AccessLog() bool { return l.Access == nil || *l.Access }

// Default returns a config with every default filled in. It has no cells, so it is not valid as
// it is; optional sections are nil (see DefaultRegistry and the like for theirs). Its job-JWT rule
// is on with the defaults of a tokens.job_jwt section (verify, so keys are needed); Parse turns the
// rule off when the file has no such section.
func Default() *Config {
	return &Config{
		Listen: Listen{Public: ":8080", Ops: "127.0.0.1:9090", HTTP1: HTTP1Edge},
		Routing: Routing{
			ClassifyTimeout: Duration{2 * time.Second},
			BodyTokenLimit:  32 << 10,
			LongPollTimeout: Duration{65 * time.Second},
			UpstreamTimeout: Duration{60 * time.Second},
			DialTimeout:     Duration{5 * time.Second},
			LearnedJobs:     LearnedJobs{Size: 100_000, TTL: Duration{24 * time.Hour}},
		},
		Limits: Limits{
			ReadHeaderTimeout: Duration{10 * time.Second},
			MaxHeaderBytes:    32 << 10,
			IdleTimeout:       Duration{120 * time.Second},
		},
		Tokens: Tokens{
			JobJWT:    JobJWT{Enabled: true, Verify: true, OnInvalid: OnInvalidIgnore, Audience: "gitlab-authz-token"},
			CacheSize: 100_000,
		},
		Agents:   Agents{Wait: Duration{20 * time.Second}, Leeway: Duration{30 * time.Second}, MaxConnections: 10},
		Shutdown: Shutdown{Grace: Duration{30 * time.Second}},
		Log:      Log{Level: "info", Format: "json"},
	}
}

// LegacyCell returns the cell with legacy: true (exactly one in a valid config).
func (c *Config) LegacyCell() (Cell, bool) {
	for _, cell := range c.Cells {
		if cell.Legacy {
			return cell, true
		}
	}
	return Cell{}, false
}
