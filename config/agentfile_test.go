package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadAgent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("agent.yaml", "edge: https://edge.example.com\ntoken_file: a1.tok\nallow_ports: [3000, 8080]\nmap_ports: [{port: 9000, address: \"10.0.0.5:9000\"}]\nmax_age: 30m\n")
	a, err := LoadAgent(good)
	if err != nil {
		t.Fatalf("LoadAgent: %v", err)
	}
	want := map[int]string{3000: "127.0.0.1:3000", 8080: "127.0.0.1:8080", 9000: "10.0.0.5:9000"}
	for p, addr := range want {
		if a.Upstreams[p] != addr {
			t.Errorf("upstream %d: got %q, want %q", p, a.Upstreams[p], addr)
		}
	}
	if a.TokenFile != filepath.Join(dir, "a1.tok") || a.Connections != 1 {
		t.Errorf("token file %q, connections %d", a.TokenFile, a.Connections)
	}

	bad := write("bad.yaml", "edge: ftp://x\nallow_ports: [0]\nmap_ports: [{port: 80, address: \"y\"}]\nconections: 2\nlog: {access: false}\n")
	_, err = LoadAgent(bad)
	var problems Problems
	if !errors.As(err, &problems) {
		t.Fatalf("got %v, want Problems", err)
	}
	for _, wantText := range []string{"bad.yaml:1: edge", "token_file: is required", "allow_ports[0]", "map_ports[0].address", "conections: unknown field", "log.access: is an edge setting"} {
		if !strings.Contains(err.Error(), wantText) {
			t.Errorf("problems lack %q:\n%v", wantText, err)
		}
	}
}
