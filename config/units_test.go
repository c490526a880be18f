package config

import (
	"testing"
	"time"
)

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		ok   bool
	}{
		{"512", 512, true},
		{"0", 0, true},
		{"32KiB", 32 << 10, true},
		{"4KiB", 4 << 10, true},
		{"1MiB", 1 << 20, true},
		{"2GiB", 2 << 30, true},
		{"4KB", 4000, true},
		{"3MB", 3_000_000, true},
		{"1GB", 1_000_000_000, true},
		{"7B", 7, true},
		{"32kib", 32 << 10, true},
		{"32 KiB", 32 << 10, true},
		{" 8 ", 8, true},
		{"", 0, false},
		{"KiB", 0, false},
		{"1.5MiB", 0, false},
		{"-1", 0, false},
		{"32K", 0, false},
		{"32 kbit", 0, false},
		{"0x10", 0, false},
		{"99999999999GiB", 0, false},
		{"9223372036854775808", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseByteSize(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("parseByteSize(%q): got error %v, want ok %v", tt.in, err, tt.ok)
			}
			if got != tt.want {
				t.Errorf("parseByteSize(%q): got %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestByteSizeString(t *testing.T) {
	tests := []struct {
		in   ByteSize
		want string
	}{{32 << 10, "32KiB"}, {1 << 20, "1MiB"}, {3 << 30, "3GiB"}, {4000, "4000"}, {0, "0"}, {1536, "1536"}}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.in.String(); got != tt.want {
				t.Errorf("String: got %q, want %q", got, tt.want)
			}
			if back, err := parseByteSize(tt.in.String()); err != nil || back != tt.in {
				t.Errorf("round trip: got %d, %v, want %d", back, err, tt.in)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"65s", 65 * time.Second, true},
		{"5m", 5 * time.Minute, true},
		{"24h", 24 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true},
		{"250ms", 250 * time.Millisecond, true},
		{"-1s", -time.Second, true}, // parses; validation says it must be positive
		{"65", 0, false},
		{"1d", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var d Duration
			err := d.parseScalar(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("parse %q: got error %v, want ok %v", tt.in, err, tt.ok)
			}
			if d.Duration != tt.want {
				t.Errorf("parse %q: got %v, want %v", tt.in, d.Duration, tt.want)
			}
		})
	}
}

// TestUnitsInConfig checks sizes and durations as they come through a config file.
func TestUnitsInConfig(t *testing.T) {
	tests := []struct {
		line string
		get  func(*Config) any
		want any
	}{
		{"routing: {body_token_limit: 4KiB}", func(c *Config) any { return c.Routing.BodyTokenLimit }, ByteSize(4096)},
		{"routing: {body_token_limit: 1MiB}", func(c *Config) any { return c.Routing.BodyTokenLimit }, ByteSize(1 << 20)},
		{"routing: {body_token_limit: 4KB}", func(c *Config) any { return c.Routing.BodyTokenLimit }, ByteSize(4000)},
		{"routing: {body_token_limit: 512}", func(c *Config) any { return c.Routing.BodyTokenLimit }, ByteSize(512)},
		{`limits: {max_header_bytes: "64KiB"}`, func(c *Config) any { return c.Limits.MaxHeaderBytes }, ByteSize(64 << 10)},
		{"routing: {long_poll_timeout: 2m}", func(c *Config) any { return c.Routing.LongPollTimeout.Duration }, 2 * time.Minute},
		{"routing: {learned_jobs: {ttl: 1h}}", func(c *Config) any { return c.Routing.LearnedJobs.TTL.Duration }, time.Hour},
		{"shutdown: {grace: 90s}", func(c *Config) any { return c.Shutdown.Grace.Duration }, 90 * time.Second},
		{"limits: {read_header_timeout: 500ms}", func(c *Config) any { return c.Limits.ReadHeaderTimeout.Duration }, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			c := mustParse(t, "", lines(with(tt.line)...))
			if got := tt.get(c); got != tt.want {
				t.Errorf("%s: got %v, want %v", tt.line, got, tt.want)
			}
		})
	}
}
