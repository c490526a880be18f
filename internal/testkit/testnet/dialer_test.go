package testnet_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"gitlab.com/edge/edge/internal/testkit/testnet"
)

func TestClientReachesLocalhostNames(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Host)
	}))
	t.Cleanup(srv.Close)
	port := mustURL(t, srv.URL).Port()
	for _, host := range []string{"localhost", "app.localhost", "8080-ws1.ws.localhost", "AUTH.WS.LOCALHOST."} {
		t.Run(host, func(t *testing.T) {
			resp, err := testnet.Client().Get("http://" + host + ":" + port + "/")
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if got, want := string(body), host+":"+port; got != want {
				t.Errorf("Host seen by the server: got %q, want %q", got, want)
			}
		})
	}
}

func TestIsLocalhost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"a.b.localhost", true},
		{"x.localhost.", true},
		{"localhost.example.com", false},
		{"notlocalhost", false},
		{"127.0.0.1", false},
	} {
		if got := testnet.IsLocalhost(tc.host); got != tc.want {
			t.Errorf("IsLocalhost(%q): got %v, want %v", tc.host, got, tc.want)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
