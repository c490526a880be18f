package config

import (
	"crypto/tls"
	"crypto/x509"
	"net/netip"
	"strings"
	"time"
)

// Registry is the shared registry of which edge holds which agent. Absent: in memory, one instance.
type Registry struct {
	Redis   Redis    `yaml:"redis"`
	TTL     Duration `yaml:"ttl"`     // entries expire after this
	Refresh Duration `yaml:"refresh"` // each edge rewrites its entries this often; less than TTL; default 4/5 of TTL
}

// Redis is a go-redis UniversalClient's options: Addr for one server, or Addrs (with MasterName
// for Sentinel) for Sentinel or Cluster.
type Redis struct {
	Addr         string   `yaml:"addr"`
	Addrs        []string `yaml:"addrs"`
	MasterName   string   `yaml:"master_name"`
	KeyPrefix    string   `yaml:"key_prefix"`
	Username     string   `yaml:"username"`
	PasswordFile string   `yaml:"password_file"` // made absolute by Parse
	Password     []byte   `yaml:"-"`             // the file's contents, trimmed
	DB           int      `yaml:"db"`
}

// Addresses returns Addr or Addrs, as UniversalOptions.Addrs wants them.
func (r Redis) Addresses() []string {
	if r.Addr != "" {
		return []string{r.Addr}
	}
	return r.Addrs
}

func (r *Registry) setDefaults() {
	r.Redis.KeyPrefix = "edge"
	r.TTL = Duration{5 * time.Minute}
	r.Refresh = Duration{4 * time.Minute}
}

// DefaultRegistry returns a registry section with its defaults (no Redis address).
func DefaultRegistry() *Registry {
	r := &Registry{}
	r.setDefaults()
	return r
}

// Internal holds the secret edges sign their edge-to-edge requests with, and the addresses an
// edge may forward to.
type Internal struct {
	SecretFile string `yaml:"secret_file"` // made absolute by Parse
	Secret     []byte `yaml:"-"`           // the file's contents, trimmed; at least 32 bytes
	// Peers are CIDRs (a bare IP is a /32 or /128) of the holder addresses (a holder's
	// advertise_internal, as found in the registry) this edge forwards to edge-to-edge. The
	// registry is shared, so a poisoned entry must not make an edge send requests, with its
	// internal JWT, anywhere else. Nil: DefaultPeers.
	Peers        []string       `yaml:"peers"`
	PeerPrefixes []netip.Prefix `yaml:"-"` // parsed from Peers (or DefaultPeers) by Validate
	// TLS makes listen.internal serve HTTPS with this certificate (advertise_internal https://),
	// so edge-to-edge traffic can leave the pod network encrypted.
	TLS *StaticTLS `yaml:"tls"`
	// CAFile verifies other edges' internal listeners when their advertised URL is https://.
	CAFile string `yaml:"ca_file"` // made absolute by Parse
	CA     []byte `yaml:"-"`
}

func (c *Config) validateRegistry(ch *checker) {
	checkSecret(ch, "internal.secret_file", c.Internal.SecretFile, c.Internal.Secret, false, "")
	c.Internal.validatePeers(ch)
	if t := c.Internal.TLS; t != nil {
		certOK := requireFile(ch, "internal.tls.cert_file", t.CertFile, t.CertPEM)
		keyOK := requireFile(ch, "internal.tls.key_file", t.KeyFile, t.KeyPEM)
		if certOK && keyOK {
			if _, err := tls.X509KeyPair(t.CertPEM, t.KeyPEM); err != nil {
				ch.add("internal.tls.key_file", "the certificate and key do not make a pair")
			}
		}
		if a := c.Listen.AdvertiseInternal; a != "" && !strings.HasPrefix(a, "https://") {
			ch.add("listen.advertise_internal", "must be https:// when internal.tls is set")
		}
	}
	if len(c.Internal.CA) > 0 && !x509.NewCertPool().AppendCertsFromPEM(c.Internal.CA) {
		ch.add("internal.ca_file", "holds no PEM certificate")
	}
	r := c.Registry
	if r == nil {
		return
	}
	const why = "required when registry is set"
	if c.Internal.SecretFile == "" && len(c.Internal.Secret) == 0 {
		ch.addNear("internal.secret_file", "registry", "%s (edges authenticate each other with it)", why)
	}
	if c.Listen.Internal == "" {
		ch.addNear("listen.internal", "registry", "%s (other edges forward to it)", why)
	}
	if c.Listen.AdvertiseInternal == "" {
		ch.addNear("listen.advertise_internal", "registry", "%s (the URL other edges reach listen.internal at)", why)
	}
	const p = "registry.redis"
	switch {
	case r.Redis.Addr == "" && len(r.Redis.Addrs) == 0:
		ch.add(p+".addr", "required: host:port of the Redis server (or addrs for Sentinel or Cluster)")
	case r.Redis.Addr != "" && len(r.Redis.Addrs) > 0:
		ch.add(p+".addrs", "set addr or addrs, not both")
	case r.Redis.Addr != "":
		checkHostPort(ch, p+".addr", r.Redis.Addr)
	default:
		for i, a := range r.Redis.Addrs {
			checkHostPort(ch, index(p+".addrs", i), a)
		}
	}
	if r.Redis.KeyPrefix == "" || strings.ContainsAny(r.Redis.KeyPrefix, " \t\r\n") {
		ch.add(p+".key_prefix", "must be a non-empty string without spaces")
	}
	if r.Redis.DB < 0 {
		ch.add(p+".db", "must not be negative")
	}
	positive(ch, "registry.ttl", r.TTL)
	positive(ch, "registry.refresh", r.Refresh)
	if r.Refresh.Duration > 0 && r.Refresh.Duration >= r.TTL.Duration {
		ch.add("registry.refresh", "must be less than registry.ttl (%s), so entries are refreshed before they expire", r.TTL)
	}
}
