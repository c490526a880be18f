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
