package tokens

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func FuzzParseRoutable(f *testing.F) {
	for _, v := range specVectors() {
		f.Add(v.token)
		body := v.token[:len(v.token)-7]
		f.Add(v.token[:len(v.token)-1] + "z")
		f.Add(withCRC(strings.Replace(body, ".01.", ".02.", 1)))
		f.Add(withCRC(body[:len(body)-2] + "zz"))
	}
	for _, s := range []string{
		"", "glrt-abcdefghij0123456789", strings.Repeat("A", 400),
		mintRaw("glrt-", "c:2\no1", 6), mintRaw("glrt-", "c:2\no:1!", 8), mintRaw("glrt-", "c:2\no:1", 9),
		mintRaw("glrt-", "o:1\nx:y", 7), mintRaw(strings.Repeat("p", 21), "c:1", 3),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		checkParseRoutable(t, token)
		// Random input almost never has a right CRC; fixing it up lets the fuzzer reach the
		// structure and payload checks.
		checkParseRoutable(t, withCRC(token))
	})
}

func checkParseRoutable(t *testing.T, token string) {
	t.Helper()
	r, err := ParseRoutable(token)
	if err != nil {
		var reason notRoutable
		if !errors.As(err, &reason) || !errors.Is(err, ErrNotRoutable) {
			t.Fatalf("error %v is not a notRoutable reason", err)
		}
		if r != (Routable{}) {
			t.Fatalf("result %+v with error", r)
		}
		return
	}
	if r.Keys.Present == 0 || strings.Contains(r.Prefix, ".") {
		return // parses (only unknown keys, or a prefix GitLab would not mint) but cannot be re-minted
	}
	again, err := MintRoutable(r.Prefix, [16]byte{}, r.Keys)
	if err != nil {
		t.Fatalf("MintRoutable(%+v): %v", r, err)
	}
	r2, err := ParseRoutable(again)
	if err != nil {
		t.Fatalf("ParseRoutable(MintRoutable(%+v)): %v", r, err)
	}
	if r2 != r {
		t.Fatalf("round trip: got %+v, want %+v", r2, r)
	}
}

func FuzzJobJWT(f *testing.F) {
	for _, s := range []string{"glcbt-a.b.c", "acme-glcbt-eyJ.eyJ.c2ln", "glcbt-x-glcbt-a.b.c", "glcbt-opaque", "", "glcbt-a..c", "a.glcbt-b.c.d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		jwt, ok := JobJWT(token)
		if !ok {
			if jwt != "" {
				t.Fatalf("JobJWT: got %q with ok=false", jwt)
			}
			return
		}
		if !strings.HasSuffix(token, "glcbt-"+jwt) || strings.Count(jwt, ".") != 2 || !looksLikeJWT(jwt) {
			t.Fatalf("JobJWT(%q): got %q, not a JWT suffix after glcbt-", token, jwt)
		}
	})
}

func FuzzParseJobClaimsUnverified(f *testing.F) {
	header := map[string]any{"alg": "RS256", "kid": "k"}
	for _, claims := range []map[string]any{
		{"c": "3", "o": "1", "sub": "gid://gitlab/Ci::Build/42", "exp": 1_900_000_000},
		{"cell_id": 3, "organization_id": "1", "aud": []string{"a"}},
		{"c": "3", "cell_id": 4},
		{"c": "Z!", "exp": "x"},
	} {
		f.Add(unsignedJWT(f, header, claims))
	}
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, jwt string) {
		c, err := ParseJobClaimsUnverified(jwt)
		if err != nil {
			if !errors.Is(err, ErrInvalidJWT) {
				t.Fatalf("error %v does not wrap ErrInvalidJWT", err)
			}
			if c != (JobClaims{}) {
				t.Fatalf("claims %+v with error", c)
			}
			return
		}
		if c.CellConflict && !c.Keys.Has(KeyCell) {
			t.Fatalf("CellConflict without a cell: %+v", c)
		}
	})
}

func FuzzAgentVerify(f *testing.F) {
	secret := testHMACSecret()
	now := time.Unix(1_800_000_000, 0)
	exp := now.Add(time.Hour).Unix()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	v, err := NewAgentVerifier(AgentVerifierOptions{Keys: []Key{
		{ID: "hs", Algorithm: "HS256", Public: secret},
		{ID: "ec", Algorithm: "ES256", Public: &key.PublicKey},
	}, Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	// Seeds from the spec: agent_id a string or a number, project_id optional, exp required.
	for _, claims := range []map[string]any{
		{"aud": "edge-agent", "exp": exp, "agent_id": "agent-1"},
		{"aud": []string{"edge-agent"}, "exp": exp, "agent_id": 42, "project_id": 7},
		{"aud": "edge-agent", "exp": exp, "agent_id": "a.b_c-D", "project_id": "group.project"},
		{"aud": "edge-agent", "exp": exp, "agent_id": strings.Repeat("x", 65)},
		{"aud": "edge-agent", "exp": exp, "agent_id": 1.5},
		{"aud": "edge-agent", "agent_id": "no-exp"},
		{"aud": "other", "exp": exp, "agent_id": "a"},
		{"aud": "edge-agent", "exp": "soon", "agent_id": "a"},
	} {
		for _, kid := range []string{"hs", "ec"} {
			o := MintAgentOptions{Key: any(secret), Algorithm: "HS256", KID: kid, Extra: claims}
			if kid == "ec" {
				o.Key, o.Algorithm = key, "ES256"
			}
			f.Add(mustMintAgent(f, o))
		}
		raw, err := json.Marshal(claims)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(raw)) // for the signed-claims path below
		f.Add(noneJWT(f, claims))
		f.Add(unsignedJWT(f, map[string]any{"alg": "HS256"}, claims))
	}
	f.Add("")
	f.Add("a.b.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		checkAgentVerify(t, v, token)
		// Random input almost never carries a good signature; signing it as the claims lets the
		// fuzzer reach claim parsing and validation.
		header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"hs"}`))
		body := header + "." + base64.RawURLEncoding.EncodeToString([]byte(token))
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(body))
		checkAgentVerify(t, v, body+"."+base64.RawURLEncoding.EncodeToString(mac.Sum(nil)))
	})
}

func checkAgentVerify(t *testing.T, v *AgentVerifier, token string) {
	t.Helper()
	id, err := v.Verify(context.Background(), token)
	if err != nil {
		if !errors.Is(err, ErrInvalidJWT) {
			t.Fatalf("error %v does not wrap ErrInvalidJWT", err)
		}
		if id != (AgentIdentity{}) {
			t.Fatalf("identity %+v with error", id)
		}
		return
	}
	if !validID(id.AgentID) || (id.ProjectID != "" && !validID(id.ProjectID)) || id.ExpiresAt.IsZero() {
		t.Fatalf("accepted a bad identity %+v", id)
	}
}
