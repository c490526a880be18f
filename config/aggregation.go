package config

import (
	"crypto/x509"
	"path"
	"slices"
	"strings"
)

// Values of Aggregation.MemberDown.
const (
	MemberDownFail    = "fail"    // a list fails with 503 naming the member
	MemberDownPartial = "partial" // answer with the members that answered, plus a Warning header
)

// Aggregation serves one Kubernetes API over several member clusters under Prefix (aggregation.md).
type Aggregation struct {
	Prefix     string          `yaml:"prefix"`
	Auth       AggregationAuth `yaml:"auth"`
	MemberDown string          `yaml:"member_down"`
	Clusters   []ClusterMember `yaml:"clusters"`
	// Placement is the member a collection create (POST) goes to; empty: such creates get 405.
	Placement string `yaml:"placement"`
}

// AggregationAuth says who may call the aggregated API: a static token file, JWT keys, or both.
type AggregationAuth struct {
	TokensFile string   `yaml:"tokens_file"` // kube-apiserver's format: token,user,uid,"group1,group2"; made absolute
	Tokens     []byte   `yaml:"-"`           // the file's contents
	Keys       []KeyRef `yaml:"keys"`
	Issuer     string   `yaml:"issuer"`   // of caller JWTs; empty: not checked
	Audience   string   `yaml:"audience"` // of caller JWTs; empty: not checked
}

// ClusterMember is one member cluster and edge's own credentials there (it needs impersonate rights).
type ClusterMember struct {
	Name               string `yaml:"name"`
	Server             string `yaml:"server"`
	TokenFile          string `yaml:"token_file"` // made absolute by Parse
	Token              []byte `yaml:"-"`          // the file's contents, trimmed
	CAFile             string `yaml:"ca_file"`    // made absolute by Parse
	CA                 []byte `yaml:"-"`          // PEM
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

func (a *Aggregation) setDefaults() {
	a.Prefix = "/k8s"
	a.MemberDown = MemberDownFail
}

// DefaultAggregation returns an aggregation section with its defaults (no clusters, no auth).
func DefaultAggregation() *Aggregation {
	a := &Aggregation{}
	a.setDefaults()
	return a
}

func (a *Aggregation) readFiles(f *files) {
	a.Auth.Tokens = f.read("aggregation.auth.tokens_file", &a.Auth.TokensFile)
	f.keys("aggregation.auth.keys", a.Auth.Keys)
	for i := range a.Clusters {
		m := &a.Clusters[i]
		p := index("aggregation.clusters", i)
		m.Token = f.secret(p+".token_file", &m.TokenFile)
		m.CA = f.read(p+".ca_file", &m.CAFile)
	}
}

func (a *Aggregation) validate(ch *checker) {
	const p = "aggregation"
	switch {
	case !strings.HasPrefix(a.Prefix, "/") || a.Prefix == "/" || path.Clean(a.Prefix) != a.Prefix:
		ch.add(p+".prefix", "must be a clean absolute path other than /, like /k8s")
	case a.Prefix == "/api" || strings.HasPrefix(a.Prefix, "/api/") || a.Prefix == "/-" || strings.HasPrefix(a.Prefix, "/-/"):
		ch.add(p+".prefix", "must not be under /api or /-, which GitLab and edge use")
	}
	if a.MemberDown != MemberDownFail && a.MemberDown != MemberDownPartial {
		ch.add(p+".member_down", "must be %q or %q", MemberDownFail, MemberDownPartial)
	}
	if a.Auth.TokensFile == "" && len(a.Auth.Tokens) == 0 && len(a.Auth.Keys) == 0 {
		ch.add(p+".auth", "required: tokens_file or keys, to authenticate callers")
	}
	checkKeys(ch, p+".auth.keys", a.Auth.Keys, keyRules{allowHMAC: true})

	const cp = p + ".clusters"
	if a.Placement != "" && !slices.ContainsFunc(a.Clusters, func(m ClusterMember) bool { return m.Name == a.Placement }) {
		ch.add(p+".placement", "%q is not one of the clusters", a.Placement)
	}
	if len(a.Clusters) == 0 {
		ch.add(cp, "required: at least one member cluster")
	}
	names := map[string]int{}
	for i, m := range a.Clusters {
		mp := index(cp, i)
		switch {
		case m.Name == "":
			ch.add(mp+".name", "required")
		case !isClusterName(m.Name):
			ch.add(mp+".name", "%q may hold only letters, digits, '.', '_' and '-'", m.Name)
		default:
			if j, dup := names[m.Name]; dup {
				ch.add(mp+".name", "duplicate name %q (also %s)", m.Name, index(cp, j))
			} else {
				names[m.Name] = i
			}
		}
		requireURL(ch, mp+".server", m.Server)
		if m.TokenFile == "" && len(m.Token) == 0 {
			ch.add(mp+".token_file", "required: edge's own token for this member")
		}
		if len(m.CA) > 0 && !x509.NewCertPool().AppendCertsFromPEM(m.CA) {
			ch.add(mp+".ca_file", "holds no PEM certificate")
		}
		if m.CAFile != "" && m.InsecureSkipVerify {
			ch.add(mp+".insecure_skip_verify", "set ca_file or insecure_skip_verify, not both")
		}
	}
}

func isClusterName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
