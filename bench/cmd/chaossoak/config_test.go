package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"gitlab.com/edge/edge/bench"
	"gitlab.com/edge/edge/config"
)

// The soak's edge config is one edge accepts: every section the soak relies on parses and
// validates, with the key and secret files it names.
func TestEdgeConfigIsValid(t *testing.T) {
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := bench.PublicKeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := func(name string) string { return write(name, []byte(hex.EncodeToString(make([]byte, 32)))) }
	spec := edgeSpec{public: "127.0.0.1:18080", ops: "127.0.0.1:19090", internal: "127.0.0.1:18081",
		cells: [3]string{"127.0.0.1:13001", "127.0.0.1:13002", "127.0.0.1:13003"}, redis: "127.0.0.1:16379",
		jwtPub: write("jwt.pub", pub), agentKey: secret("agent.key"), apiKey: secret("api.key"), internalKey: secret("internal.key")}
	text := edgeConfig(spec)
	c, err := config.Parse([]byte(text), "edge.yaml", dir)
	if err != nil {
		t.Fatalf("edge rejects the soak's config: %v\n%s", err, text)
	}
	if len(c.Cells) != 3 || c.CellHealth(0) == nil || c.CellHealth(2).Interval.Duration.String() != "2s" {
		t.Errorf("cells or their health checks not as written:\n%s", text)
	}
	if c.Registry == nil || c.Registry.Redis.Addr != spec.redis {
		t.Errorf("registry not in Redis:\n%s", text)
	}
}
