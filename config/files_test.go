package config

import (
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRelativeSecretPaths(t *testing.T) {
	dir := t.TempDir()
	ec := newECKey(t, elliptic.P256())
	writeFile(t, dir, "secrets/internal.key", "\n  "+secret32+"  \n")
	writeFile(t, dir, "keys/es.pub", publicPEM(t, &ec.PublicKey))
	writeFile(t, dir, "secrets/agent.key", secret32+"\n")
	writeFile(t, dir, "/abs/redis.pw", "pw\n")
	src := lines(append(baseLines(),
		"listen: {internal: \"127.0.0.1:8081\", advertise_internal: \"http://127.0.0.1:8081\"}",
		"internal: {secret_file: secrets/internal.key}",
		"registry:",
		"  redis: {addr: \"127.0.0.1:6379\", password_file: "+filepath.Join(dir, "abs", "redis.pw")+"}",
		"agents:",
		"  keys:",
		"    - {alg: HS256, file: secrets/agent.key}",
		"    - {kid: e1, alg: ES256, file: ./keys/../keys/es.pub}",
	)...)
	cfgPath := writeFile(t, dir, "conf/../edge.yaml", src)

	check := func(t *testing.T, c *Config) {
		t.Helper()
		tests := []struct {
			name      string
			got, want string
		}{
			{"internal.secret_file", c.Internal.SecretFile, filepath.Join(dir, "secrets", "internal.key")},
			{"internal secret trimmed", string(c.Internal.Secret), secret32},
			{"agents.keys[0].file", c.Agents.Keys[0].File, filepath.Join(dir, "secrets", "agent.key")},
			{"agents.keys[0] hmac trimmed", string(c.Agents.Keys[0].PEM), secret32},
			{"agents.keys[1].file cleaned", c.Agents.Keys[1].File, filepath.Join(dir, "keys", "es.pub")},
			{"agents.keys[1] pem kept", string(c.Agents.Keys[1].PEM), publicPEM(t, &ec.PublicKey)},
			{"absolute path kept", c.Registry.Redis.PasswordFile, filepath.Join(dir, "abs", "redis.pw")},
			{"redis password", string(c.Registry.Redis.Password), "pw"},
		}
		for _, tt := range tests {
			if tt.got != tt.want {
				t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
			}
		}
	}
	t.Run("absolute config path", func(t *testing.T) {
		c, err := Load(cfgPath)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		check(t, c)
	})
	t.Run("relative config path", func(t *testing.T) {
		t.Chdir(filepath.Dir(dir))
		c, err := Load(filepath.Join(filepath.Base(dir), "edge.yaml"))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		check(t, c)
	})
}

func TestFileProblems(t *testing.T) {
	dir := t.TempDir()
	short := "too-short-secret-do-not-print"
	writeFile(t, dir, "short.key", short)
	writeFile(t, dir, "blank.key", " \n\t\n")
	ec := newECKey(t, elliptic.P384())
	writeFile(t, dir, "p384.pub", publicPEM(t, &ec.PublicKey))
	writeFile(t, dir, "private.pem", privatePEM(t, ec))
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	writeFile(t, dir, "ed.pub", publicPEM(t, edPriv.Public()))
	writeFile(t, dir, "cert.pem", selfSigned(t, newECKey(t, elliptic.P256())))
	writeFile(t, dir, "garbage.pub", "hello "+short)
	writeFile(t, dir, "jwks.json", `{"keys": []}`)
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	agentKey := func(k string) []string { return with("agents:", "  keys:", "    - "+k) } // key on line 6

	tests := []struct {
		name string
		src  []string
		path string
		line int
		msg  string
	}{
		{"missing secret file", with("internal: {secret_file: secrets/none.key}"), "internal.secret_file", 4, "secrets/none.key does not exist (secrets/none.key is relative to the config file's directory)"},
		{"short secret", with("internal: {secret_file: short.key}"), "internal.secret_file", 4, "at least 32 bytes"},
		{"blank secret", with("internal: {secret_file: blank.key}"), "internal.secret_file", 4, "blank.key is empty"},
		{"directory", with("internal: {secret_file: adir}"), "internal.secret_file", 4, "cannot read " + filepath.Join(dir, "adir")},
		{"short hmac key", agentKey("{alg: HS256, file: short.key}"), "agents.keys[0].file", 6, "an HS256 secret must hold at least 32 bytes"},
		{"alg needs other curve", agentKey("{alg: ES256, file: p384.pub}"), "agents.keys[0].file", 6, "alg ES256 needs an ECDSA P-256 public key; the file holds an ECDSA P-384 key"},
		{"rsa alg with ec key", agentKey("{alg: RS256, file: p384.pub}"), "agents.keys[0].file", 6, "needs an RSA public key"},
		{"eddsa with ec key", agentKey("{alg: EdDSA, file: cert.pem}"), "agents.keys[0].file", 6, "needs an Ed25519 public key; the file holds an ECDSA P-256 key"},
		{"private key", agentKey("{alg: ES384, file: private.pem}"), "agents.keys[0].file", 6, "holds a private key"},
		{"not pem", agentKey("{alg: RS256, file: garbage.pub}"), "agents.keys[0].file", 6, "holds no PEM public key or certificate"},
		{"duplicate kid", with("agents:", "  keys:", "    - {kid: a, alg: EdDSA, file: ed.pub}", "    - {kid: a, alg: ES384, file: p384.pub}"), "agents.keys[1].kid", 7, `duplicate kid "a" (also agents.keys[0])`},
		{"empty jwks", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt: {jwks_file: jwks.json}"}, "tokens.job_jwt.jwks_file", 4, "is not a JWKS"},
		{"job jwt keys take no hmac", []string{"cells:", `  - {id: 1, url: "http://a", legacy: true}`, "tokens:", "  job_jwt:", "    keys: [{kid: k, alg: HS512, file: short.key}]"}, "tokens.job_jwt.keys[0].alg", 5, "unsupported alg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := parse(t, dir, lines(tt.src...))
			p, ok := find(ps, tt.path)
			if !ok {
				t.Fatalf("no problem at %q; got:\n%v", tt.path, ps)
			}
			if p.Line != tt.line {
				t.Errorf("line: got %d, want %d (%v)", p.Line, tt.line, p)
			}
			if !strings.Contains(p.Message, tt.msg) {
				t.Errorf("message: got %q, want it to contain %q", p.Message, tt.msg)
			}
			if strings.Contains(ps.Error(), short) {
				t.Errorf("problems show a file's contents: %v", ps)
			}
		})
	}

	t.Run("good keys", func(t *testing.T) {
		rsaPub, err := os.ReadFile(filepath.Join("..", "examples", "keys", "gitlab-jwt.pub"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "rsa.pub", string(rsaPub))
		mustParse(t, dir, lines(with("agents:", "  keys:",
			"    - {alg: EdDSA, file: ed.pub}",
			"    - {alg: ES384, file: p384.pub}",
			"    - {alg: ES256, file: cert.pem}",
			"    - {alg: RS256, file: rsa.pub}",
			"    - {alg: PS512, file: rsa.pub}",
		)...))
	})
}
