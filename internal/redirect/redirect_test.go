package redirect

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// family is every spelling of a way off the origin that a path can try.
var family = []string{
	"//x", "///x", "/\\x", "/\\/x", "//\\x", "/%2F%2Fx", "/%5Cx", "/%5C%5Cx",
	"/\t/x", "/\r/x", "/\n/x", "/\t\\x", "/ //x", "/.//x", "/..//x", "/%2e//x", "/%2E%2E//x", "/.%2e//x",
	"/a/../..//x", "/a/./b", "/a/%2e%2E/b", "/?next=//x", "/?next=https://x/", "/a?u=http%3A%2F%2Fx",
	"/a#//x", "/\x7f//x", "/\xc3\xa9", "https://x/", "http:x", "x", "", "//x/?y", "\\\\x", "/a/b?c=d",
}

// TestLocalFamily: whatever Local returns, a browser resolving it against the origin stays on it;
// and the plain paths are kept as they are.
func TestLocalFamily(t *testing.T) {
	kept := map[string]bool{"/%2F%2Fx": true, "/%5Cx": true, "/%5C%5Cx": true, "/?next=//x": true,
		"/?next=https://x/": true, "/a?u=http%3A%2F%2Fx": true, "/a/b?c=d": true}
	for _, target := range family {
		got := Local(target)
		if kept[target] != (got == target) {
			t.Errorf("Local(%q) = %q; kept: %v, want %v", target, got, got == target, kept[target])
		}
		if !staysOn("https://w.example:8443/start", got) {
			t.Errorf("Local(%q) = %q leaves the origin", target, got)
		}
	}
	if got := Local("/" + strings.Repeat("a", MaxLocal)); got != "/" {
		t.Errorf("a path over MaxLocal: got %d bytes, want /", len(got))
	}
}

// staysOn resolves loc against base as a browser would (RFC 3986, after dropping tab, CR and LF
// and reading '\' as '/', as the URL standard does for http and https) and reports whether the
// scheme and host are still base's.
func staysOn(base, loc string) bool {
	b, _ := url.Parse(base)
	loc = strings.NewReplacer("\t", "", "\r", "", "\n", "", "\\", "/").Replace(loc)
	ref, err := url.Parse(loc)
	if err != nil {
		return false
	}
	u := b.ResolveReference(ref)
	return u.Scheme == b.Scheme && u.Host == b.Host && u.User == nil
}

func TestAbsolute(t *testing.T) {
	for _, tt := range []struct {
		scheme, authority, target, want string
	}{
		{"https", "h.example", "/a?b", "https://h.example/a?b"},
		{"https", "h.example:8443", "//evil", "https://h.example:8443/"},
		{"http", "[::1]:80", "/x", "http://[::1]:80/x"},
		{"https", "evil.example/", "/x", ""},
		{"https", "u@evil.example", "/x", ""},
		{"https", "h\\evil", "/x", ""},
		{"https", "h:80x", "/x", ""},
		{"https", "", "/x", ""},
		{"https", "h:", "/x", ""},
		{"javascript", "h", "/x", ""},
	} {
		got, ok := Absolute(tt.scheme, tt.authority, tt.target)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Absolute(%q, %q, %q) = %q, %v; want %q", tt.scheme, tt.authority, tt.target, got, ok, tt.want)
		}
	}
}

func TestWrite(t *testing.T) {
	for _, tt := range []struct {
		loc    string
		status int
	}{
		{"/a?b=c", 302},
		{"https://h.example/x?y=1", 302},
		{"http://h.example", 302},
		{"//evil.example", 500},
		{"/\\evil.example", 500},
		{"https://u@h.example/", 500},
		{"https://h.example//evil", 500},
		{"javascript:alert(1)", 500},
		{"https://h.example/a\r\nSet-Cookie: x=1", 500},
	} {
		w := httptest.NewRecorder()
		Write(w, 302, tt.loc)
		if w.Code != tt.status {
			t.Errorf("Write(%q): status %d, want %d", tt.loc, w.Code, tt.status)
		}
		if tt.status == 500 && w.Header().Get("Location") != "" {
			t.Errorf("Write(%q) wrote a Location", tt.loc)
		}
	}
}

func FuzzLocal(f *testing.F) {
	for _, s := range family {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		got := Local(target)
		if !staysOn("https://w.example/", got) {
			t.Fatalf("Local(%q) = %q leaves the origin", target, got)
		}
		if !Safe(got) || Local(got) != got {
			t.Fatalf("Local(%q) = %q is not safe to write", target, got)
		}
	})
}
