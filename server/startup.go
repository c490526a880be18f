package server

import (
	"log/slog"

	"gitlab.com/edge/edge/config"
)

// logStartup says, once, what this process is and what it serves.
func logStartup(log *slog.Logger, cfg *config.Config, opts Options) {
	b := opts.Build
	cells := make([]uint64, 0, len(cfg.Cells))
	for _, c := range cfg.Cells {
		cells = append(cells, c.ID)
	}
	legacy, _ := cfg.LegacyCell()
	log.Info("edge starting", "version", b.Version, "commit", b.Commit, "go", b.GoVersion, "config", opts.Path,
		"cells", cells, "legacy_cell", legacy.ID, "features", features(cfg))
	if !cfg.Tokens.JobJWT.Enabled {
		log.Info("job-JWT routing rule off: no tokens.job_jwt section; job tokens route by the later rules")
	}
}

// features lists what this config turns on, for the startup line.
func features(cfg *config.Config) []string {
	out := []string{"runner_routing"}
	switch {
	case cfg.TLS != nil && cfg.TLS.ACME != nil:
		out = append(out, "tls:acme")
	case cfg.TLS != nil:
		out = append(out, "tls:static")
	}
	switch j := cfg.Tokens.JobJWT; {
	case !j.Enabled:
		out = append(out, "job_jwt:off")
	case j.Verify:
		out = append(out, "job_jwt:verified")
	default:
		out = append(out, "job_jwt:unverified")
	}
	if cfg.Routing.ClassifyURL != "" {
		out = append(out, "classify")
	}
	if len(cfg.Agents.Keys) > 0 {
		out = append(out, "agents")
	}
	if cfg.GitLabAPI != nil {
		out = append(out, "gitlab_api")
	}
	if cfg.Aggregation != nil {
		out = append(out, "aggregation")
	}
	if w := cfg.Workspaces; w != nil {
		out = append(out, "workspaces")
		if w.InsecureHTTP {
			out = append(out, "workspaces:insecure_http")
		}
	}
	if cfg.Registry != nil {
		out = append(out, "registry:redis")
	} else {
		out = append(out, "registry:memory")
	}
	if cfg.Listen.Internal != "" && len(cfg.Internal.Secret) > 0 {
		out = append(out, "internal")
	}
	if cfg.Log.AccessLog() {
		out = append(out, "access_log")
	}
	if cfg.Tracing != nil {
		out = append(out, "tracing")
	}
	return out
}
