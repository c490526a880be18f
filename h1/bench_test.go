package h1

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// BenchmarkParseHead reads a runner's jobs/request head with the engine and with net/http's
// ReadRequest (the parser its server runs), side by side.
func BenchmarkParseHead(b *testing.B) {
	raw := []byte("POST /api/v4/jobs/request HTTP/1.1\r\nHost: gitlab.example.com\r\nUser-Agent: gitlab-runner 17.11.0 (main; go1.24; linux/amd64)\r\n" +
		"Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: 15\r\nAccept-Encoding: gzip\r\n\r\n{\"token\":\"t1\"}")
	b.Run("h1", func(b *testing.B) {
		var r Request
		b.ReportAllocs()
		for b.Loop() {
			if _, v := Parse(raw, &r, Limits{MaxHead: DefaultMaxHead, MaxHeaders: DefaultMaxHeaders}); v != Accept {
				b.Fatal(v)
			}
		}
	})
	b.Run("net_http", func(b *testing.B) {
		br := bufio.NewReader(nil)
		rd := bytes.NewReader(raw)
		b.ReportAllocs()
		for b.Loop() {
			rd.Reset(raw)
			br.Reset(rd)
			if _, err := http.ReadRequest(br); err != nil {
				b.Fatal(err)
			}
		}
	})
}
