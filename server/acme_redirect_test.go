package server

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestRedirectHTTPFamily: redirect_http answers every spelling of an off-site path with a
// Location on https://<the host asked>:<public port>, and a Host that is not a plain host name
// with 400 and no Location.
func TestRedirectHTTPFamily(t *testing.T) {
	srv := httptest.NewServer(redirectHandler("127.0.0.1:8443", nil))
	defer srv.Close()
	send := func(host, target string) *http.Response {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, target := range []string{"//evil.example", "///evil.example", "/\\evil.example", "/\\/evil.example",
		"/%2F%2Fevil.example", "/%5Cevil.example", "/.//evil.example", "/..//evil.example", "/?next=//evil.example",
		"/api/v4/jobs/request?x=1", "*"} {
		resp := send("edge.test", target)
		loc := resp.Header.Get("Location")
		u, err := url.Parse(loc)
		if resp.StatusCode != http.StatusPermanentRedirect || err != nil || u.Scheme != "https" || u.Host != "edge.test:8443" || !strings.HasPrefix(u.EscapedPath(), "/") || strings.HasPrefix(u.EscapedPath(), "//") {
			t.Errorf("%q: %d to %q, want 308 on https://edge.test:8443/", target, resp.StatusCode, loc)
		}
	}
	if loc := send("edge.test:80", "/a?b=c").Header.Get("Location"); loc != "https://edge.test:8443/a?b=c" {
		t.Errorf("plain path: Location %q", loc)
	}
	for _, host := range []string{"evil.example/x", "u@evil.example", "evil.example\\x", "evil.example%2f", "a b", ""} {
		resp := send(host, "/x")
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Errorf("Host %q: %d to %q, want 400 and no Location", host, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}
