package integration

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"gitlab.com/edge/edge/tokens"
)

// badJobJWT is a job token JWT that must never be trusted for routing.
type badJobJWT struct {
	name  string
	token func(t *testing.T, cell, job uint64) string
}

// badJobJWTs name cell 3 but fail verification in one way each.
func badJobJWTs() []badJobJWT {
	mint := func(t *testing.T, o tokens.MintJobOptions, cell, job uint64) string {
		t.Helper()
		now := time.Now()
		o.KID, o.JobID = jwtKID, job
		o.Keys = tokens.Keys{}.Set(tokens.KeyCell, cell).Set(tokens.KeyOrganization, 1)
		if o.Issuer == "" {
			o.Issuer = jwtIssuer
		}
		if o.Audience == "" {
			o.Audience = jwtAudience
		}
		if o.IssuedAt.IsZero() {
			o.IssuedAt = now
		}
		raw, err := tokens.MintJobJWT(o)
		if err != nil {
			t.Fatalf("MintJobJWT: %v", err)
		}
		return "glcbt-" + raw
	}
	return []badJobJWT{
		{"alg none", func(t *testing.T, cell, job uint64) string {
			return "glcbt-" + unsignedJWT(t, cell, job, "")
		}},
		{"alg none with a signature", func(t *testing.T, cell, job uint64) string {
			return "glcbt-" + unsignedJWT(t, cell, job, "c2lnbmF0dXJl")
		}},
		{"HS256 signed with the RS256 public key", func(t *testing.T, cell, job uint64) string {
			pub, err := os.ReadFile(demoKeyPath("gitlab-jwt.pub"))
			if err != nil {
				t.Fatalf("public key: %v", err)
			}
			return mint(t, tokens.MintJobOptions{Key: pub, Algorithm: "HS256", ExpiresAt: time.Now().Add(time.Hour)}, cell, job)
		}},
		{"expired", func(t *testing.T, cell, job uint64) string {
			now := time.Now()
			return mint(t, tokens.MintJobOptions{Key: demoPrivateKey(t), Algorithm: "RS256", IssuedAt: now.Add(-3 * time.Hour), ExpiresAt: now.Add(-2 * time.Hour)}, cell, job)
		}},
		{"without exp", func(t *testing.T, cell, job uint64) string {
			return mint(t, tokens.MintJobOptions{Key: demoPrivateKey(t), Algorithm: "RS256"}, cell, job)
		}},
		{"wrong audience", func(t *testing.T, cell, job uint64) string {
			return mint(t, tokens.MintJobOptions{Key: demoPrivateKey(t), Algorithm: "RS256", Audience: "someone-else", ExpiresAt: time.Now().Add(time.Hour)}, cell, job)
		}},
	}
}

// unsignedJWT is an "alg":"none" JWT with valid claims naming cell.
func unsignedJWT(t *testing.T, cell, job uint64, signature string) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now()
	header := map[string]string{"alg": "none", "typ": "JWT", "kid": jwtKID}
	claims := map[string]any{
		"iss": jwtIssuer, "aud": jwtAudience, "sub": "gid://gitlab/Ci::Build/" + strconv.FormatUint(job, 10),
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "c": strconv.FormatUint(cell, 36), "o": "1",
	}
	return enc(header) + "." + enc(claims) + "." + signature
}

// TestInvalidJobJWTsIgnored: with on_invalid: ignore a JWT that fails verification counts as
// no token, so the later rules route: the job id's range, or the legacy cell.
func TestInvalidJobJWTsIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	r := runner1711()
	e.mark()
	inRange, err := e.cell(2).AddJob()
	if err != nil {
		t.Fatalf("AddJob: %v", err)
	}
	for _, bad := range badJobJWTs() {
		t.Run(bad.name, func(t *testing.T) {
			e.mark()
			// The token names cell 3; the job id is in cell 2's range.
			a := e.send(t, r.updateJob(inRange, bad.token(t, 3, inRange), "running", 0))
			if a.status == http.StatusUnauthorized {
				t.Errorf("got 401 with on_invalid: ignore")
			}
			checkDelivered(t, e.expectAt(t, 2), a)

			// No range and nothing learned: the legacy cell (which does not own the job).
			const orphan = outsideRanges + 777
			a = e.send(t, r.updateJob(orphan, bad.token(t, 3, orphan), "running", 0))
			if got := e.newRecords(); len(got[1]) != 1 || len(got[2])+len(got[3]) != 0 {
				t.Errorf("want the request at the legacy cell only, got cell 1: %d, cell 2: %d, cell 3: %d", len(got[1]), len(got[2]), len(got[3]))
			}
		})
	}
}

// TestInvalidJobJWTsRejected: with on_invalid: reject they are answered 401 and go nowhere.
func TestInvalidJobJWTsRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{config: func(c *edgeConfig) { c.Tokens.JobJWT.OnInvalid = "reject" }})
	r := runner1711()
	e.mark()
	inRange, err := e.cell(2).AddJob()
	if err != nil {
		t.Fatalf("AddJob: %v", err)
	}
	for _, bad := range badJobJWTs() {
		t.Run(bad.name, func(t *testing.T) {
			e.mark()
			a := e.send(t, r.updateJob(inRange, bad.token(t, 3, inRange), "running", 0))
			if a.status != http.StatusUnauthorized {
				t.Errorf("got %d, want 401 (%s)", a.status, redactTokens(a.body))
			}
			e.expectNowhere(t)
		})
	}
	t.Run("a valid JWT still routes", func(t *testing.T) {
		e.mark()
		now := time.Now()
		raw, err := tokens.MintJobJWT(tokens.MintJobOptions{
			Key: demoPrivateKey(t), Algorithm: "RS256", KID: jwtKID, Issuer: jwtIssuer, Audience: jwtAudience,
			Keys: tokens.Keys{}.Set(tokens.KeyCell, 2), JobID: inRange, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
		})
		if err != nil {
			t.Fatalf("MintJobJWT: %v", err)
		}
		a := e.send(t, r.updateJob(inRange, "glcbt-"+raw, "running", 0))
		checkDelivered(t, e.expectAt(t, 2), a)
	})
}
