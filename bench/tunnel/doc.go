// Package tunnelbench compares the multiplexers the agent tunnel could use (hashicorp/yamux with
// its default and a raised stream window, and HTTP/2 reversed over the agent's connection, as
// cloudflared does) with a direct loopback connection. Everything is in the benchmarks:
//
//	go test -run '^$' -bench . -benchtime 2s ./bench/tunnel/
package tunnelbench
