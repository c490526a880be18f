package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	tests := []struct {
		method, body string
	}{
		{"GET", ""},
		{"POST", `{"token":"x","last_update":"y"}`},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			rec := httptest.NewRecorder()
			handler("3001").ServeHTTP(rec, httptest.NewRequest(tt.method, "/api/v4/jobs/request", strings.NewReader(tt.body)))
			res := rec.Result()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK || string(b) != responseBody {
				t.Errorf("answer: got %d %q, want 200 %q", res.StatusCode, b, responseBody)
			}
			if got := res.Header.Get("Bench-Upstream"); got != "3001" {
				t.Errorf("Bench-Upstream: got %q, want 3001", got)
			}
			if got, want := res.Header.Get("Bench-Body-Bytes"), strconv.Itoa(len(tt.body)); got != want {
				t.Errorf("Bench-Body-Bytes: got %q, want %s", got, want)
			}
		})
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		name       string
		target     string
		wantStatus int
		wantLen    int
	}{
		{"zero", "/bytes?n=0", http.StatusOK, 0},
		{"small", "/bytes?n=5", http.StatusOK, 5},
		{"several chunks", "/bytes?n=600000", http.StatusOK, 600000},
		{"missing n", "/bytes", http.StatusBadRequest, -1},
		{"negative", "/bytes?n=-1", http.StatusBadRequest, -1},
		{"too big", "/bytes?n=1073741825", http.StatusBadRequest, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			handler("3001").ServeHTTP(rec, httptest.NewRequest("GET", tt.target, nil))
			res := rec.Result()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status: got %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if tt.wantLen < 0 {
				return
			}
			if len(b) != tt.wantLen || res.Header.Get("Content-Length") != strconv.Itoa(tt.wantLen) {
				t.Errorf("body: got %d bytes, Content-Length %q, want %d", len(b), res.Header.Get("Content-Length"), tt.wantLen)
			}
			if got := res.Header.Get("Bench-Upstream"); got != "3001" {
				t.Errorf("Bench-Upstream: got %q, want 3001", got)
			}
		})
	}
	rec := httptest.NewRecorder()
	handler("3001").ServeHTTP(rec, httptest.NewRequest("POST", "/bytes?n=5", strings.NewReader("abc")))
	if b := rec.Body.String(); b != responseBody || rec.Header().Get("Bench-Body-Bytes") != "3" {
		t.Errorf("POST /bytes: got %q with %s body bytes, want the plain answer after draining 3", b, rec.Header().Get("Bench-Body-Bytes"))
	}
}
