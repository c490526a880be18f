package config

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Workspaces serves workspace URLs https://<port>-<workspace>.<domain>/ through agent tunnels,
// behind an OIDC login and an authorizer (workspaces.md).
type Workspaces struct {
	Domain       string        `yaml:"domain"`        // lower-cased by Validate
	InsecureHTTP bool          `yaml:"insecure_http"` // development only: plain HTTP, no __Host- or Secure
	OIDC         OIDC          `yaml:"oidc"`
	Authorizer   Authorizer    `yaml:"authorizer"`
	Session      Session       `yaml:"session"`
	Logins       Logins        `yaml:"logins"`
	SSH          *WorkspaceSSH `yaml:"ssh"` // required with listen.ssh
}

// Logins bound the logins in flight (login tickets, states, transfer tokens) that requests
// without a session make edge keep until they are spent or expire.
type Logins struct {
	PerClient int `yaml:"per_client"` // per client address (IPv6: per /64)
	Total     int `yaml:"total"`
}

// WorkspaceSSH is the SSH front's keys: edge's own host key, and the key it logs in to workspaces'
// sshd with (which they trust).
type WorkspaceSSH struct {
	HostKeyFile   string `yaml:"host_key_file"` // made absolute by Parse
	HostKey       []byte `yaml:"-"`
	ClientKeyFile string `yaml:"client_key_file"` // made absolute by Parse
	ClientKey     []byte `yaml:"-"`
	// AgentForwarding and RemoteForwarding pass those requests on; off unless set.
	AgentForwarding  bool `yaml:"agent_forwarding"`
	RemoteForwarding bool `yaml:"remote_forwarding"`
}

type OIDC struct {
	Issuer           string   `yaml:"issuer"` // the provider is found by OIDC discovery from it
	ClientID         string   `yaml:"client_id"`
	ClientSecretFile string   `yaml:"client_secret_file"` // made absolute by Parse
	ClientSecret     []byte   `yaml:"-"`                  // the file's contents, trimmed
	RedirectURL      string   `yaml:"redirect_url"`       // its host is the auth host
	Scopes           []string `yaml:"scopes"`
}

// Authorizer says who may use which workspace: the HTTP authorizer (URL, with a shared secret)
// or the static file (File), exactly one of them.
type Authorizer struct {
	URL        string   `yaml:"url"`
	SecretFile string   `yaml:"secret_file"` // made absolute by Parse
	Secret     []byte   `yaml:"-"`           // the file's contents, trimmed; at least 32 bytes
	Timeout    Duration `yaml:"timeout"`     // for one HTTP authorizer call; past it, deny
	File       string   `yaml:"file"`        // static authorizer YAML, made absolute; re-read by its owner, not here
}

type Session struct {
	KeyFile string   `yaml:"key_file"` // made absolute by Parse
	Key     []byte   `yaml:"-"`        // the file's contents, trimmed; at least 32 bytes
	TTL     Duration `yaml:"ttl"`
	Recheck Duration `yaml:"recheck"` // authorization is asked again at least this often
}

func (w *Workspaces) setDefaults() {
	w.OIDC.Scopes = []string{"openid", "profile"}
	w.Authorizer.Timeout = Duration{5 * time.Second}
	w.Session.TTL = Duration{12 * time.Hour}
	w.Session.Recheck = Duration{30 * time.Second}
	w.Logins = Logins{PerClient: 100, Total: 100_000}
}

// DefaultWorkspaces returns a workspaces section with its defaults (nothing required filled in).
func DefaultWorkspaces() *Workspaces {
	w := &Workspaces{}
	w.setDefaults()
	return w
}

func (w *Workspaces) readFiles(f *files) {
	w.OIDC.ClientSecret = f.secret("workspaces.oidc.client_secret_file", &w.OIDC.ClientSecretFile)
	w.Authorizer.Secret = f.secret("workspaces.authorizer.secret_file", &w.Authorizer.SecretFile)
	f.read("workspaces.authorizer.file", &w.Authorizer.File)
	w.Session.Key = f.secret("workspaces.session.key_file", &w.Session.KeyFile)
	if s := w.SSH; s != nil {
		s.HostKey = f.read("workspaces.ssh.host_key_file", &s.HostKeyFile)
		s.ClientKey = f.read("workspaces.ssh.client_key_file", &s.ClientKeyFile)
	}
}

func (w *Workspaces) validate(ch *checker) {
	const p = "workspaces"
	w.Domain = strings.ToLower(w.Domain)
	switch {
	case w.Domain == "":
		ch.add(p+".domain", "required: the domain workspace hosts are under, like workspaces.example.com")
	case !isHostname(w.Domain):
		ch.add(p+".domain", "%q is not a host name (no scheme, port or trailing dot)", w.Domain)
	}

	const op = p + ".oidc"
	requireURL(ch, op+".issuer", w.OIDC.Issuer)
	if w.OIDC.ClientID == "" {
		ch.add(op+".client_id", "required")
	}
	if w.OIDC.ClientSecretFile == "" && len(w.OIDC.ClientSecret) == 0 {
		ch.add(op+".client_secret_file", "required")
	}
	if requireURL(ch, op+".redirect_url", w.OIDC.RedirectURL) {
		if u, _ := url.Parse(w.OIDC.RedirectURL); u.Scheme != "https" && !w.InsecureHTTP {
			ch.add(op+".redirect_url", "must be https (unless insecure_http: true)")
		}
	}
	if !slices.Contains(w.OIDC.Scopes, "openid") {
		ch.add(op+".scopes", "must include openid")
	}

	const ap = p + ".authorizer"
	a := &w.Authorizer
	switch {
	case a.URL == "" && a.File == "":
		ch.add(ap, "required: url (with secret_file) for the HTTP authorizer, or file for the static one")
	case a.URL != "" && a.File != "":
		ch.add(ap+".file", "set url or file, not both")
	case a.URL != "":
		requireURL(ch, ap+".url", a.URL)
		checkSecret(ch, ap+".secret_file", a.SecretFile, a.Secret, true, ": the HS256 secret edge signs its authorization requests with")
		positive(ch, ap+".timeout", a.Timeout)
	}

	if s := w.SSH; s != nil {
		for _, k := range []struct {
			path string
			data []byte
		}{{p + ".ssh.host_key_file", s.HostKey}, {p + ".ssh.client_key_file", s.ClientKey}} {
			if _, err := ssh.ParsePrivateKey(k.data); err != nil {
				ch.add(k.path, "required: an unencrypted OpenSSH or PEM private key (%v)", err)
			}
		}
	}

	const sp = p + ".session"
	checkSecret(ch, sp+".key_file", w.Session.KeyFile, w.Session.Key, true, ": the key session cookies are signed and encrypted with")
	positive(ch, sp+".ttl", w.Session.TTL)
	positive(ch, sp+".recheck", w.Session.Recheck)
	if w.Logins.PerClient < 1 {
		ch.add(p+".logins.per_client", "must be at least 1")
	}
	if w.Logins.Total < w.Logins.PerClient {
		ch.add(p+".logins.total", "must be at least logins.per_client (%d)", w.Logins.PerClient)
	}
}
