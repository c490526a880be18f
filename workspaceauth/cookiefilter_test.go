package workspaceauth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSetCookieFilter: a workspace app's Set-Cookie is read as a browser reads it; edge's names
// in every spelling are dropped, and a Domain attribute never survives.
func TestSetCookieFilter(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"edge_session=x", ""},
		{"edge_session; Domain=ws.localhost; Path=/", ""},
		{"=edge_session; Path=/", ""},
		{" edge_session ; Path=/", ""},
		{"EDGE_SESSION=x", ""},
		{"Edge_Session=x", ""},
		{`"edge_session"=x`, ""},
		{`"edge_session=x"`, ""},
		{"__Host-edge_session=x; Path=/; Secure", ""},
		{"__HOST-edge_session=x", ""},
		{"__host-EDGE_SESSION=x", ""},
		{"__Secure-edge_session=x", ""},
		{"__Secure-__Host-edge_session=x", ""},
		{"\tedge_session\t=x", ""},
		{"edge_bind=x", ""},
		{"edge_login=x", ""},
		{"__Host-edge_auth=x", ""},
		{"edge_auth", ""},
		{"app=1", "app=1"},
		{"app=1; Path=/; HttpOnly", "app=1; Path=/; HttpOnly"},
		{"app=1; Domain=ws.localhost; Path=/", "app=1; Path=/"},
		{"app=1;domain=.ws.localhost", "app=1"},
		{"app=1; DOMAIN=auth.ws.localhost; Secure", "app=1; Secure"},
		{"app=1; Domain=a; Domain=b; Max-Age=5", "app=1; Max-Age=5"},
		{"app=x; Path=/domain", "app=x; Path=/domain"},
		{"edge_sessions=x", "edge_sessions=x"},
		{"my_edge_session=x", "my_edge_session=x"},
		{"nameless", "nameless"},
	} {
		rec := httptest.NewRecorder()
		rec.Header().Add("Set-Cookie", tt.in)
		f := &cookieFilter{ResponseWriter: rec}
		f.WriteHeader(http.StatusOK)
		got := rec.Header().Values("Set-Cookie")
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("Set-Cookie %q passed as %q; want it dropped", tt.in, got)
		case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
			t.Errorf("Set-Cookie %q became %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestSessionFoundAmongDecoys: a request carrying a nameless or forged edge_session before the
// real one still has its session.
func TestSessionFoundAmongDecoys(t *testing.T) {
	c := newCodec([]byte("0123456789abcdef0123456789abcdef"), 3600e9, false)
	v, err := c.encode(sessionCookie, session{User: User{ID: "u"}, Host: "h", Expires: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	for _, header := range []string{"edge_session; edge_session=" + v, "edge_session=forged; edge_session=" + v, "edge_session=" + v} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Cookie", header)
		if s, ok := c.session(r); !ok || s.User.ID != "u" {
			t.Errorf("Cookie %.40q...: no session", header)
		}
	}
}

// BenchmarkSetCookieFilter: the filter on a workspace answer's cookies, one with a Domain.
func BenchmarkSetCookieFilter(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = filterSetCookie("app=1; Path=/; HttpOnly; SameSite=Lax")
		_, _ = filterSetCookie("app_shared=1; Domain=ws.localhost; Path=/")
	}
}
