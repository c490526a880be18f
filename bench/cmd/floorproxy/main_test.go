package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"gitlab.com/edge/edge/internal/testkit/testnet"
)

func startFloor(t *testing.T, upstream string) string {
	return "http://" + testnet.ServeRaw(t, func(c net.Conn) { serve(c, upstream) })
}

func TestFloorProxiesGetsOnOneUpstreamConnection(t *testing.T) {
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.RequestURI()+" for "+r.Header.Get("X-Forwarded-For"))
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	base := startFloor(t, up.Listener.Addr().String())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for _, path := range []string{"/api/v4/runners/router/discovery", "/a%2Fb?x=1"} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := path + " for 127.0.0.1"; resp.StatusCode != 200 || string(body) != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, body, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("upstream connections: %d, want 1 (kept alive)", n)
	}
}

func TestFloorRefusesABody(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("a request with a body reached the upstream") }))
	defer up.Close()
	resp, err := http.Post(startFloor(t, up.Listener.Addr().String())+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("POST: %d, want 501", resp.StatusCode)
	}
}
