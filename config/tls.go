package config

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
)

// TLS makes listen.public serve HTTPS, with a static certificate or ACME.
type TLS struct {
	Static       *StaticTLS `yaml:"static"`
	ACME         *ACME      `yaml:"acme"`
	RedirectHTTP string     `yaml:"redirect_http"` // optional plain-HTTP listener: ACME HTTP-01 and redirects
}

type StaticTLS struct {
	CertFile string `yaml:"cert_file"` // made absolute by Parse
	KeyFile  string `yaml:"key_file"`
	CertPEM  []byte `yaml:"-"`
	KeyPEM   []byte `yaml:"-"`
}

// LetsEncrypt is the default ACME directory.
const LetsEncrypt = "https://acme-v02.api.letsencrypt.org/directory"

type ACME struct {
	Email   string   `yaml:"email"`
	CA      string   `yaml:"ca"`      // ACME directory URL
	CARoot  string   `yaml:"ca_root"` // PEM root of a private ACME CA's HTTPS directory; made absolute
	Domains []string `yaml:"domains"`
	// OnDemandWorkspaces gets certificates for workspace hosts at their first handshake.
	OnDemandWorkspaces bool   `yaml:"on_demand_workspaces"`
	Storage            string `yaml:"storage"` // certificate directory, made absolute; empty: certmagic's default

	CARootPEM []byte `yaml:"-"`
}

func (a *ACME) setDefaults() { a.CA = LetsEncrypt }

func (t *TLS) readFiles(f *files) {
	if s := t.Static; s != nil {
		s.CertPEM = f.read("tls.static.cert_file", &s.CertFile)
		s.KeyPEM = f.read("tls.static.key_file", &s.KeyFile)
	}
	if a := t.ACME; a != nil {
		a.CARootPEM = f.read("tls.acme.ca_root", &a.CARoot)
		f.resolve(&a.Storage)
	}
}

func (c *Config) validateTLS(ch *checker) {
	t := c.TLS
	if t == nil {
		return
	}
	switch {
	case t.Static != nil && t.ACME != nil:
		ch.add("tls.acme", "set tls.static or tls.acme, not both")
	case t.Static == nil && t.ACME == nil:
		ch.add("tls", "set tls.static (cert_file, key_file) or tls.acme")
	}
	if t.RedirectHTTP != "" {
		checkHostPort(ch, "tls.redirect_http", t.RedirectHTTP)
	}
	if s := t.Static; s != nil {
		certOK := requireFile(ch, "tls.static.cert_file", s.CertFile, s.CertPEM)
		keyOK := requireFile(ch, "tls.static.key_file", s.KeyFile, s.KeyPEM)
		if certOK && keyOK {
			if _, err := tls.X509KeyPair(s.CertPEM, s.KeyPEM); err != nil {
				ch.add("tls.static.key_file", "the certificate and key do not make a pair: %s", strings.TrimPrefix(err.Error(), "tls: "))
			}
		}
	}
	if a := t.ACME; a != nil {
		if len(a.Domains) == 0 && !a.OnDemandWorkspaces {
			ch.add("tls.acme.domains", "required: the domains to get certificates for (or on_demand_workspaces: true)")
		}
		for i, d := range a.Domains {
			if !isHostname(d) {
				ch.add(index("tls.acme.domains", i), "%q is not a host name", d)
			}
		}
		if a.OnDemandWorkspaces && c.Workspaces == nil {
			ch.add("tls.acme.on_demand_workspaces", "needs a workspaces section")
		}
		if msg := checkURL(a.CA); msg != "" {
			ch.add("tls.acme.ca", "%s", msg)
		}
		if a.Email != "" && !strings.Contains(a.Email, "@") {
			ch.add("tls.acme.email", "is not an email address")
		}
		if len(a.CARootPEM) > 0 && !x509.NewCertPool().AppendCertsFromPEM(a.CARootPEM) {
			ch.add("tls.acme.ca_root", "holds no PEM certificate")
		}
	}
}

// requireFile reports a required file that is not set, and tells whether its contents are there.
func requireFile(ch *checker, path, file string, data []byte) bool {
	if file == "" && len(data) == 0 {
		ch.add(path, "required")
	}
	return len(data) > 0
}
