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

// JobJWT configures the job-JWT routing rule: routing CI job token JWTs by their claims
// (tokens.md section 2).
type JobJWT struct {
	// Enabled tells whether the rule is on: Parse sets it when the file has a tokens.job_jwt
	// section, and clears it (and Verify) when it has none. Off, job JWTs are not routed by their
	// claims at all, verified or not (they go where a request without a token goes); Verify means
	// nothing then, so code checks Enabled first and builds no verifier. Default() has it on.
	Enabled bool `yaml:"-"`
	// Verify: with the rule on, route only on claims whose signature verifies with Keys or JWKS;
	// false routes on unverified claims.
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
	if j.Enabled && j.Verify && len(j.Keys) == 0 && j.JWKSFile == "" && len(j.JWKS) == 0 {
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
