package config

// Values of JobJWT.OnInvalid.
const (
	OnInvalidIgnore = "ignore" // a job JWT that fails verification counts as no token
	OnInvalidReject = "reject" // it is answered with 401
)

type Tokens struct {
	JobJWT    JobJWT `yaml:"job_jwt"`
	CacheSize int    `yaml:"cache_size"` // verified tokens kept
}

// JobJWT configures verification of CI job token JWTs (tokens.md section 2).
type JobJWT struct {
	Verify    bool     `yaml:"verify"`
	OnInvalid string   `yaml:"on_invalid"`
	Keys      []KeyRef `yaml:"keys"`
	JWKSFile  string   `yaml:"jwks_file"` // made absolute by Parse
	JWKS      []byte   `yaml:"-"`         // the file's contents
	Issuer    string   `yaml:"issuer"`    // empty: iss not checked
	Audience  string   `yaml:"audience"`
}

func (t *Tokens) validate(ch *checker) {
	const p = "tokens"
	if t.CacheSize <= 0 {
		ch.add(p+".cache_size", "must be positive")
	}
	j := &t.JobJWT
	const jp = p + ".job_jwt"
	if j.OnInvalid != OnInvalidIgnore && j.OnInvalid != OnInvalidReject {
		ch.add(jp+".on_invalid", "must be %q or %q", OnInvalidIgnore, OnInvalidReject)
	}
	if j.Verify && len(j.Keys) == 0 && j.JWKSFile == "" && len(j.JWKS) == 0 {
		ch.addNear(jp+".verify", jp, "verify is true but no keys or jwks_file; set verify: false to route on unverified claims")
	}
	checkKeys(ch, jp+".keys", j.Keys, keyRules{kidRequired: true})
	if len(j.JWKS) > 0 && !isJWKS(j.JWKS) {
		ch.add(jp+".jwks_file", "is not a JWKS (a JSON object with a non-empty \"keys\" array)")
	}
	if j.Audience == "" {
		ch.add(jp+".audience", "must not be empty")
	}
}
