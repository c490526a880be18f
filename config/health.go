package config

import (
	"cmp"
	"net/url"
	"strings"
	"time"
)

// HealthCheck is a cell's active health check: GET Path on each address every Interval (with a
// little jitter), answered 2xx within Timeout to pass. An address is down after UnhealthyAfter
// failures in a row and up again after HealthyAfter passes in a row. The top-level health block
// gives the defaults of every cell's own; zero fields take the block's, then DefaultHealth's.
type HealthCheck struct {
	Path           string   `yaml:"path"`
	Interval       Duration `yaml:"interval"`
	Timeout        Duration `yaml:"timeout"`
	HealthyAfter   int      `yaml:"healthy_after"`
	UnhealthyAfter int      `yaml:"unhealthy_after"`
}

// DefaultHealth is the check a health block starts from: GitLab's own readiness endpoint.
func DefaultHealth() HealthCheck {
	return HealthCheck{Path: "/-/readiness", Interval: Duration{5 * time.Second}, Timeout: Duration{2 * time.Second},
		HealthyAfter: 1, UnhealthyAfter: 2}
}

// CellHealth is the check of cells[i]: its own block over the top-level one over DefaultHealth;
// nil when neither block is set (the cell is never checked: passive evidence ejects its addresses
// but never takes it down).
func (c *Config) CellHealth(i int) *HealthCheck {
	own := c.Cells[i].Health
	if own == nil && c.Health == nil {
		return nil
	}
	h := DefaultHealth()
	for _, layer := range []*HealthCheck{c.Health, own} {
		if layer == nil {
			continue
		}
		h.Path = cmp.Or(layer.Path, h.Path)
		h.Interval = cmp.Or(layer.Interval, h.Interval)
		h.Timeout = cmp.Or(layer.Timeout, h.Timeout)
		h.HealthyAfter = cmp.Or(layer.HealthyAfter, h.HealthyAfter)
		h.UnhealthyAfter = cmp.Or(layer.UnhealthyAfter, h.UnhealthyAfter)
	}
	return &h
}

// Addresses are the cell's URLs: urls, or url as the one-address form.
func (c Cell) Addresses() []string {
	if len(c.URLs) > 0 {
		return c.URLs
	}
	if c.URL == "" {
		return nil
	}
	return []string{c.URL}
}

func (c *Config) validateHealth(ch *checker) {
	if c.Health != nil {
		checkHealth(ch, "health", *c.Health)
	}
	for i := range c.Cells {
		if c.Cells[i].Health != nil {
			checkHealth(ch, index("cells", i)+".health", *c.CellHealth(i))
		}
	}
}

func checkHealth(ch *checker, p string, h HealthCheck) {
	if h.Path != "" && (!strings.HasPrefix(h.Path, "/") || strings.ContainsAny(h.Path, "?#")) {
		ch.add(p+".path", "must be an absolute path without query, like /-/readiness")
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"interval", h.Interval}, {"timeout", h.Timeout}} {
		if d.v.Duration < 0 {
			ch.add(p+"."+d.name, "must be positive")
		}
	}
	if h.Timeout.Duration > 0 && h.Interval.Duration > 0 && h.Timeout.Duration > h.Interval.Duration {
		ch.add(p+".timeout", "must not be longer than the interval (%s)", h.Interval.Duration)
	}
	if h.HealthyAfter < 0 {
		ch.add(p+".healthy_after", "must be at least 1")
	}
	if h.UnhealthyAfter < 0 {
		ch.add(p+".unhealthy_after", "must be at least 1")
	}
}

// validateCellURLs checks url or urls: one of them; each an absolute http(s) URL; the addresses
// of one cell differ only in scheme, host and port, since a request that failed to connect to one
// goes to another with the same path.
func validateCellURLs(ch *checker, p string, cell Cell) []string {
	switch {
	case cell.URL != "" && len(cell.URLs) > 0:
		ch.add(p+".urls", "set url or urls, not both")
		return nil
	case cell.URL == "" && len(cell.URLs) == 0:
		ch.add(p+".url", "required: an absolute http(s) URL (or urls, a list of them)")
		return nil
	case cell.URL != "":
		if requireURL(ch, p+".url", cell.URL) {
			return []string{cell.URL}
		}
		return nil
	}
	var ok []string
	path := ""
	for j, s := range cell.URLs {
		if !requireURL(ch, index(p+".urls", j), s) {
			continue
		}
		u, _ := url.Parse(s)
		sp := strings.TrimSuffix(u.EscapedPath(), "/")
		if len(ok) > 0 && sp != path {
			ch.add(index(p+".urls", j), "path %q differs from %q: a cell's addresses differ only in scheme, host and port", sp, path)
			continue
		}
		path = sp
		ok = append(ok, s)
	}
	return ok
}
