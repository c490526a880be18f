package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestProxy sends a 512 B POST and a GET through the proxy to a recording upstream: the path,
// method and body arrive whole, the Host is the upstream's, X-Forwarded-* are set, and the
// answer comes back as the upstream wrote it.
func TestProxy(t *testing.T) {
	type seen struct {
		method, path, host, xff, xfh, body string
	}
	var mu sync.Mutex
	var got []seen
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, seen{r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Host"), string(b)})
		w.Header().Set("Bench-Body-Bytes", strconv.Itoa(len(b)))
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	front := httptest.NewServer(newProxy(u))
	defer front.Close()

	body := bytes.Repeat([]byte("0123456789abcdef"), 32)
	resp, err := http.Post(front.URL+"/api/v4/projects/1/issues?x=1", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(answer) != `{"ok":true}` || resp.Header.Get("Bench-Body-Bytes") != "512" {
		t.Errorf("answer: %d %q body bytes %s", resp.StatusCode, answer, resp.Header.Get("Bench-Body-Bytes"))
	}
	resp, err = http.Get(front.URL + "/api/v4/runners/router/discovery")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	frontHost := strings.TrimPrefix(front.URL, "http://")
	want := []seen{
		{"POST", "/api/v4/projects/1/issues?x=1", u.Host, "127.0.0.1", frontHost, string(body)},
		{"GET", "/api/v4/runners/router/discovery", u.Host, "127.0.0.1", frontHost, ""},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("upstream saw %d requests, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d:\ngot  %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestBufferPool(t *testing.T) {
	p := newBufferPool()
	b := p.Get()
	if len(b) != bufferSize {
		t.Fatalf("Get: %d bytes, want %d", len(b), bufferSize)
	}
	p.Put(b[:10])
	if b := p.Get(); len(b) != bufferSize {
		t.Errorf("Get after Put of a resliced buffer: %d bytes, want %d", len(b), bufferSize)
	}
	p.Put(make([]byte, 10)) // not one of its own: dropped
}

func TestParseUpstream(t *testing.T) {
	for _, s := range []string{"", "127.0.0.1:1", "ftp://x", "http://"} {
		if _, err := parseUpstream(s); err == nil {
			t.Errorf("parseUpstream(%q): got no error", s)
		}
	}
	if u, err := parseUpstream("http://127.0.0.1:3001"); err != nil || u.Host != "127.0.0.1:3001" {
		t.Errorf("parseUpstream: got %v %v", u, err)
	}
}
