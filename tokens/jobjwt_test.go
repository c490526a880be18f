package tokens

import (
	"strings"
	"testing"
)

func TestJobJWT(t *testing.T) {
	jwt := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_"
	cases := []struct {
		name, token string
		want        string
		ok          bool
	}{
		{"plain", "glcbt-" + jwt, jwt, true},
		{"instance prefix", "acme-glcbt-" + jwt, jwt, true},
		{"instance prefix containing glcbt-", "glcbt-x-glcbt-" + jwt, jwt, true},
		{"minimal segments", "glcbt-a.b.c", "a.b.c", true},
		{"opaque legacy job token", "glcbt-64_abcdefghijklmnopqrstu", "", false},
		{"no glcbt-", jwt, "", false},
		{"empty", "", "", false},
		{"only prefix", "glcbt-", "", false},
		{"two segments", "glcbt-a.b", "", false},
		{"four segments", "glcbt-a.b.c.d", "", false},
		{"empty middle segment", "glcbt-a..c", "", false},
		{"empty signature (alg none) is still a JWT, for Verify to refuse", "glcbt-a.b.", "a.b.", true},
		{"empty first segment", "glcbt-.b.c", "", false},
		{"padding", "glcbt-a.b.c=", "", false},
		{"standard base64 alphabet", "glcbt-a.b+.c", "", false},
		{"space", "glcbt-a.b .c", "", false},
		{"non-ASCII", "glcbt-a.bé.c", "", false},
		{"glcbt- only after the first dot", "x.glcbt-a.b.c", "", false},
		{"routable runner token", specVectors()[0].token, "", false},
		{"too long", "glcbt-a.b." + strings.Repeat("c", maxJWTLen), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := JobJWT(c.token)
			if got != c.want || ok != c.ok {
				t.Errorf("JobJWT: got %q %v, want %q %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestIsBase64URL(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		want := 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_'
		if got := isBase64URL(b); got != want {
			t.Errorf("isBase64URL(%q): got %v, want %v", b, got, want)
		}
	}
}
