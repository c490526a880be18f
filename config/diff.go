package config

import (
	"bytes"
	"net/netip"
	"reflect"
	"slices"
)

// Diff returns the dotted names of the settings that differ between two validated configs, in
// this order: listen.public, listen.ops, listen.internal, listen.advertise_internal,
// limits.read_header_timeout, limits.max_header_bytes, limits.idle_timeout,
// limits.max_connections, log.level, log.format, log.access, registry, internal.secret_file,
// internal.peers, shutdown.grace, cells, routing, tokens, agents, gitlab_api. It compares what
// the settings mean (parsed values, secrets and keys by content), not how they are written: a key
// file moved with the same key in it, or "10.0.0.1" become "10.0.0.1/32", is no difference. With
// a nil config, every name is returned. The caller decides which differences need a restart.
func Diff(old, next *Config) []string {
	var out []string
	for _, s := range diffSettings() {
		if old == nil || next == nil || !s.same(old, next) {
			out = append(out, s.name)
		}
	}
	return out
}

type setting struct {
	name string
	same func(a, b *Config) bool
}

func diffSettings() []setting {
	return []setting{
		{"listen.public", func(a, b *Config) bool { return a.Listen.Public == b.Listen.Public }},
		{"listen.ops", func(a, b *Config) bool { return a.Listen.Ops == b.Listen.Ops }},
		{"listen.internal", func(a, b *Config) bool { return a.Listen.Internal == b.Listen.Internal }},
		{"listen.advertise_internal", func(a, b *Config) bool { return a.Listen.AdvertiseInternal == b.Listen.AdvertiseInternal }},
		{"limits.read_header_timeout", func(a, b *Config) bool { return a.Limits.ReadHeaderTimeout == b.Limits.ReadHeaderTimeout }},
		{"limits.max_header_bytes", func(a, b *Config) bool { return a.Limits.MaxHeaderBytes == b.Limits.MaxHeaderBytes }},
		{"limits.idle_timeout", func(a, b *Config) bool { return a.Limits.IdleTimeout == b.Limits.IdleTimeout }},
		{"limits.max_connections", func(a, b *Config) bool { return a.Limits.MaxConnections == b.Limits.MaxConnections }},
		{"log.level", func(a, b *Config) bool { return a.Log.Level == b.Log.Level }},
		{"log.format", func(a, b *Config) bool { return a.Log.Format == b.Log.Format }},
		{"log.access", func(a, b *Config) bool { return a.Log.AccessLog() == b.Log.AccessLog() }},
		{"registry", func(a, b *Config) bool {
			return reflect.DeepEqual(registryMeaning(a.Registry), registryMeaning(b.Registry))
		}},
		{"internal.secret_file", func(a, b *Config) bool { return bytes.Equal(a.Internal.Secret, b.Internal.Secret) }},
		{"internal.peers", func(a, b *Config) bool { return slices.Equal(peersMeaning(a.Internal), peersMeaning(b.Internal)) }},
		{"shutdown.grace", func(a, b *Config) bool { return a.Shutdown.Grace == b.Shutdown.Grace }},
		{"cells", func(a, b *Config) bool { return slices.EqualFunc(a.Cells, b.Cells, sameCell) }},
		{"routing", func(a, b *Config) bool {
			return reflect.DeepEqual(routingMeaning(a.Routing), routingMeaning(b.Routing))
		}},
		{"tokens", func(a, b *Config) bool { return reflect.DeepEqual(tokensMeaning(a.Tokens), tokensMeaning(b.Tokens)) }},
		{"agents", func(a, b *Config) bool { return reflect.DeepEqual(agentsMeaning(a.Agents), agentsMeaning(b.Agents)) }},
		{"gitlab_api", func(a, b *Config) bool {
			return reflect.DeepEqual(gitLabAPIMeaning(a.GitLabAPI), gitLabAPIMeaning(b.GitLabAPI))
		}},
	}
}

// The xMeaning functions return a copy of a section without what only says where a value came
// from (file names, the strings parsed values were parsed from), with empty byte slices as nil.

func sameCell(a, b Cell) bool {
	return a.ID == b.ID && a.URL == b.URL && a.Legacy == b.Legacy && a.KeepsHost() == b.KeepsHost() &&
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
