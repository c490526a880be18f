package config

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Validate checks every rule of the config and fills the fields parsed from others
// (Cell.Ranges from IDRanges, Routing.TrustedPrefixes from TrustedProxies). It reads no files:
// Parse and Load do that first. The error is Problems, listing every problem.
func (c *Config) Validate() error {
	ch := newChecker(c.File, c.lines)
	c.validate(ch)
	return ch.err()
}

func (c *Config) validate(ch *checker) {
	c.validateListen(ch)
	c.validateCells(ch)
	c.validateHealth(ch)
	c.validateRunners(ch)
	c.Routing.validate(ch)
	c.Limits.validate(ch)
	c.Tokens.validate(ch)
	c.validateTLS(ch)
	c.validateRegistry(ch)
	c.validateAgents(ch)
	if c.Workspaces != nil {
		c.Workspaces.validate(ch)
	}
	if c.Listen.SSH != "" {
		checkHostPort(ch, "listen.ssh", c.Listen.SSH)
		if c.Workspaces == nil || c.Workspaces.SSH == nil {
			ch.add("listen.ssh", "needs workspaces.ssh (host_key_file, client_key_file)")
		}
	}
	if c.Aggregation != nil {
		c.Aggregation.validate(ch)
	}
	if c.Tracing != nil {
		c.Tracing.validate(ch)
	}
	positive(ch, "shutdown.grace", c.Shutdown.Grace)
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		ch.add("log.level", "must be debug, info, warn or error")
	}
	if c.Log.Format != "json" && c.Log.Format != "text" {
		ch.add("log.format", "must be json or text")
	}
}

func (c *Config) validateListen(ch *checker) {
	l := c.Listen
	addrs := []struct{ path, addr string }{
		{"listen.public", l.Public},
		{"listen.ops", l.Ops},
		{"listen.internal", l.Internal},
	}
	if c.TLS != nil {
		addrs = append(addrs, struct{ path, addr string }{"tls.redirect_http", c.TLS.RedirectHTTP})
	}
	used := map[string]string{}
	for i, a := range addrs {
		switch {
		case a.addr == "" && i < 2:
			ch.add(a.path, "required: host:port to listen on")
		case a.addr == "":
		case i < 3 && !checkHostPort(ch, a.path, a.addr):
		case !strings.HasSuffix(a.addr, ":0"):
			if other, dup := used[a.addr]; dup {
				ch.add(a.path, "same address as %s", other)
			}
			used[a.addr] = a.path
		}
	}
	if l.AdvertiseInternal != "" {
		requireURL(ch, "listen.advertise_internal", l.AdvertiseInternal)
	}
	if l.HTTP1 != HTTP1Edge && l.HTTP1 != HTTP1NetHTTP {
		ch.add("listen.http1", "%q: want %q or %q", l.HTTP1, HTTP1Edge, HTTP1NetHTTP)
	}
}

func (c *Config) validateCells(ch *checker) {
	if len(c.Cells) == 0 {
		ch.add("cells", "no cells configured")
		return
	}
	ids := map[uint64]int{}
	urls := map[string]int{}
	legacy := -1
	for i := range c.Cells {
		cell := &c.Cells[i]
		p := index("cells", i)
		if cell.ID == 0 {
			ch.add(p+".id", "required: a positive integer")
		} else if j, dup := ids[cell.ID]; dup {
			ch.add(p+".id", "duplicate cell id %d (also cells[%d])", cell.ID, j)
		} else {
			ids[cell.ID] = i
		}
		for _, u := range validateCellURLs(ch, p, *cell) {
			key := urlKey(u)
			if j, dup := urls[key]; dup && j == i {
				ch.add(p+".urls", "%s is listed twice", u)
			} else if dup {
				ch.add(p+".url", "same URL as cells[%d]", j)
			} else {
				urls[key] = i
			}
		}
		if cell.Legacy {
			if legacy >= 0 {
				ch.add(p+".legacy", "cells[%d] is the legacy cell already; exactly one cell has legacy: true", legacy)
			} else {
				legacy = i
			}
		}
		if len(cell.IDRanges) > 0 {
			cell.Ranges = cell.Ranges[:0]
			for j, s := range cell.IDRanges {
				r, err := parseIDRange(s)
				if err != nil {
					ch.add(index(p+".id_ranges", j), "%v", err)
					continue
				}
				cell.Ranges = append(cell.Ranges, r)
			}
		} else {
			for j, r := range cell.Ranges {
				if r.Lo > r.Hi {
					ch.add(index(p+".id_ranges", j), "%d is greater than %d", r.Lo, r.Hi)
				}
			}
		}
	}
	if legacy < 0 {
		ch.add("cells", "no cell has legacy: true; exactly one must (it gets every request no other rule routes)")
	}
	c.checkOverlaps(ch)
}

func parseIDRange(s string) (IDRange, error) {
	form := fmt.Errorf(`%q must be "lo-hi" with decimal ids, like "2000000-3999999"`, s)
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return IDRange{}, form
	}
	l, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
	h, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
	if err1 != nil || err2 != nil {
		return IDRange{}, form
	}
	if l > h {
		return IDRange{}, fmt.Errorf("%q: %d is greater than %d", s, l, h)
	}
	return IDRange{Lo: l, Hi: h}, nil
}

// checkOverlaps reports every range that overlaps a range of another cell, at the one that starts
// later. Ranges within one cell may overlap: they route to the same place. It sweeps the ranges in
// order of their start, keeping the two reaching furthest from different cells, so a config with
// many ranges costs n log n, not n².
func (c *Config) checkOverlaps(ch *checker) {
	type ref struct {
		cell, idx int
		r         IDRange
	}
	var all []ref
	for i, cell := range c.Cells {
		for j, r := range cell.Ranges {
			if r.Lo <= r.Hi {
				all = append(all, ref{i, j, r})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b ref) int { return cmp.Compare(a.r.Lo, b.r.Lo) })
	var best, second *ref // best reaches furthest; second furthest among other cells than best's
	for k := range all {
		y := &all[k]
		x := best
		if x != nil && x.cell == y.cell {
			x = second
		}
		if x != nil && x.r.Hi >= y.r.Lo {
			ch.add(index(index("cells", y.cell)+".id_ranges", y.idx),
				"%d-%d overlaps %d-%d (cells[%d].id_ranges[%d]): ranges of cell %d and cell %d must not overlap",
				y.r.Lo, y.r.Hi, x.r.Lo, x.r.Hi, x.cell, x.idx, c.Cells[x.cell].ID, c.Cells[y.cell].ID)
		}
		switch {
		case best == nil || y.r.Hi > best.r.Hi:
			if best != nil && best.cell != y.cell {
				second = best
			}
			best = y
		case y.cell != best.cell && (second == nil || y.r.Hi > second.r.Hi):
			second = y
		}
	}
}

func (r *Routing) validate(ch *checker) {
	const p = "routing"
	if r.ClassifyURL != "" {
		requireURL(ch, p+".classify_url", r.ClassifyURL)
	}
	positive(ch, p+".classify_timeout", r.ClassifyTimeout)
	positive(ch, p+".long_poll_timeout", r.LongPollTimeout)
	positive(ch, p+".upstream_timeout", r.UpstreamTimeout)
	positive(ch, p+".dial_timeout", r.DialTimeout)
	if r.BodyTokenLimit <= 0 {
		ch.add(p+".body_token_limit", "must be positive")
	}
	if r.LearnedJobs.Size <= 0 {
		ch.add(p+".learned_jobs.size", "must be positive")
	}
	positive(ch, p+".learned_jobs.ttl", r.LearnedJobs.TTL)
	if len(r.TrustedProxies) > 0 {
		r.TrustedPrefixes = r.TrustedPrefixes[:0]
		for i, s := range r.TrustedProxies {
			pfx, ok := parsePrefix(s)
			if !ok {
				ch.add(index(p+".trusted_proxies", i), "%q is not a CIDR (like 10.0.0.0/8) or an IP address", s)
				continue
			}
			r.TrustedPrefixes = append(r.TrustedPrefixes, pfx)
		}
	}
}

func parsePrefix(s string) (netip.Prefix, bool) {
	s = strings.TrimSpace(s)
	if pfx, err := netip.ParsePrefix(s); err == nil {
		return pfx.Masked(), true
	}
	addr, err := netip.ParseAddr(s)
	if err != nil || addr.Zone() != "" {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(addr, addr.BitLen()), true
}

func (l *Limits) validate(ch *checker) {
	const p = "limits"
	positive(ch, p+".read_header_timeout", l.ReadHeaderTimeout)
	positive(ch, p+".idle_timeout", l.IdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		ch.add(p+".max_header_bytes", "must be positive")
	}
	if l.MaxConnections < 0 {
		ch.add(p+".max_connections", "must not be negative (0 is unlimited)")
	}
}

func positive(ch *checker, path string, d Duration) {
	if d.Duration <= 0 {
		ch.add(path, "must be positive")
	}
}

// checkHostPort reports an address that is not host:port with a numeric port, and tells whether it is.
func checkHostPort(ch *checker, path, addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	_, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil || strings.ContainsAny(host, " /") {
		ch.add(path, `%q must be host:port, like ":8080" or "127.0.0.1:9090"`, addr)
		return false
	}
	return true
}

// requireURL reports a URL that is missing or not an absolute http(s) URL, and tells whether it is one.
func requireURL(ch *checker, path, s string) bool {
	if s == "" {
		ch.add(path, "required: an absolute http(s) URL")
		return false
	}
	if msg := checkURL(s); msg != "" {
		ch.add(path, "%s", msg)
		return false
	}
	return true
}

// checkURL tells what is wrong with s as an absolute http(s) URL, or "" when nothing is.
func checkURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
		return "must be an absolute http(s) URL"
	case u.User != nil:
		return "must not hold credentials: secrets go in files"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "must have no query or fragment"
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return "has a bad port"
		}
	}
	return ""
}

// urlKey is what two cell URLs that reach the same place have in common: scheme and host without
// case, the default port filled in, no trailing slash.
func urlKey(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(net.JoinHostPort(u.Hostname(), port)) +
		strings.TrimSuffix(u.EscapedPath(), "/")
}

// isHostname tells whether s is a DNS name: dot-separated labels of letters, digits and inner '-'.
func isHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
