package config

import (
	"bytes"
	"maps"
	"net/netip"
	"reflect"
	"slices"
)

// The Same functions tell whether two validated configs' sections mean the same: they compare
// parsed values, secrets and keys by content, not how they are written (a key file moved with
// the same key in it, or "10.0.0.1" become "10.0.0.1/32", is no difference). Which differences
// a reload applies is the server's modules' business, not this package's.

// SameCells: the cells, their addresses, ranges and host rule, in order.
func SameCells(a, b []Cell) bool { return slices.EqualFunc(a, b, sameCell) }

// SameHealth: every cell's health check as it applies (its own over the health block), by cell.
func SameHealth(a, b *Config) bool {
	checks := func(c *Config) map[uint64]HealthCheck {
		out := map[uint64]HealthCheck{}
		for i, cell := range c.Cells {
			if h := c.CellHealth(i); h != nil {
				out[cell.ID] = *h
			}
		}
		return out
	}
	return maps.Equal(checks(a), checks(b))
}

// SamePeers: internal.peers as a set.
func SamePeers(a, b Internal) bool { return slices.Equal(peersMeaning(a), peersMeaning(b)) }

// SameRouting: the routing section.
func SameRouting(a, b Routing) bool { return reflect.DeepEqual(routingMeaning(a), routingMeaning(b)) }

// SameRegistry: the registry section (nil: the in-memory registry).
func SameRegistry(a, b *Registry) bool {
	return reflect.DeepEqual(registryMeaning(a), registryMeaning(b))
}

// SameTokens: the tokens section.
func SameTokens(a, b Tokens) bool { return reflect.DeepEqual(tokensMeaning(a), tokensMeaning(b)) }

// SameAgents: the agents section but agents.wait, which is a setting of its own.
func SameAgents(a, b Agents) bool {
	a.Wait, b.Wait = Duration{}, Duration{}
	return reflect.DeepEqual(agentsMeaning(a), agentsMeaning(b))
}

// SameGitLabAPI: the gitlab_api section (nil: off).
func SameGitLabAPI(a, b *GitLabAPI) bool {
	return reflect.DeepEqual(gitLabAPIMeaning(a), gitLabAPIMeaning(b))
}

// SameInternalTLS: internal.tls's certificate and key by content (nil: plain HTTP).
func SameInternalTLS(a, b Internal) bool {
	if (a.TLS == nil) != (b.TLS == nil) {
		return false
	}
	return a.TLS == nil || bytes.Equal(a.TLS.CertPEM, b.TLS.CertPEM) && bytes.Equal(a.TLS.KeyPEM, b.TLS.KeyPEM)
}

// The xMeaning functions return a copy of a section without what only says where a value came
// from (file names, the strings parsed values were parsed from), with empty byte slices as nil.

func sameCell(a, b Cell) bool {
	return a.ID == b.ID && slices.Equal(a.Addresses(), b.Addresses()) && a.Legacy == b.Legacy && a.KeepsHost() == b.KeepsHost() &&
		slices.Equal(a.Ranges, b.Ranges)
}

// peersMeaning is the set of peer prefixes: their order means nothing.
func peersMeaning(in Internal) []netip.Prefix {
	ps := slices.Clone(in.PeerPrefixes)
	slices.SortFunc(ps, netip.Prefix.Compare)
	return slices.Compact(ps)
}

func routingMeaning(r Routing) Routing {
	r.TrustedProxies = nil
	if len(r.TrustedPrefixes) == 0 {
		r.TrustedPrefixes = nil
	}
	return r
}

func registryMeaning(r *Registry) *Registry {
	if r == nil {
		return nil
	}
	c := *r
	c.Redis.Addrs = slices.Clone(c.Redis.Addrs)
	if len(c.Redis.Addrs) == 0 {
		c.Redis.Addrs = nil
	}
	c.Redis.PasswordFile = ""
	c.Redis.Password = bytesMeaning(c.Redis.Password)
	return &c
}

func tokensMeaning(t Tokens) Tokens {
	t.JobJWT.Keys = keysMeaning(t.JobJWT.Keys)
	t.JobJWT.JWKSFile = ""
	t.JobJWT.JWKS = bytesMeaning(t.JobJWT.JWKS)
	return t
}

func agentsMeaning(a Agents) Agents {
	a.Keys = keysMeaning(a.Keys)
	return a
}

func gitLabAPIMeaning(g *GitLabAPI) *GitLabAPI {
	if g == nil {
		return nil
	}
	c := *g
	c.SecretFile = ""
	c.Secret = bytesMeaning(c.Secret)
	return &c
}

func keysMeaning(keys []KeyRef) []KeyRef {
	if len(keys) == 0 {
		return nil
	}
	out := make([]KeyRef, len(keys))
	for i, k := range keys {
		k.File = ""
		k.PEM = bytesMeaning(k.PEM)
		out[i] = k
	}
	return out
}

func bytesMeaning(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// SameRunners: the runners section, controllers' secrets by content.
func SameRunners(a, b Runners) bool {
	meaning := func(r Runners) *Admission {
		if r.Admission == nil {
			return nil
		}
		m := *r.Admission
		m.Controllers = slices.Clone(m.Controllers)
		for i := range m.Controllers {
			m.Controllers[i].SecretFile = ""
		}
		return &m
	}
	return reflect.DeepEqual(meaning(a), meaning(b))
}
