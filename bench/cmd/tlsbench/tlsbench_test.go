package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
)

func TestNginxConfig(t *testing.T) {
	c := certFiles{Cert: "/d/cert.pem", Key: "/d/key.pem"}
	v, err := parseNginxVersion("nginx version: nginx/1.22.1\n")
	if err != nil || v != [3]int{1, 22, 1} {
		t.Fatalf("version %v %v", v, err)
	}
	old := nginxConfig("/d/nginx", 8443, 0, 9000, c, v, true)
	for _, want := range []string{"listen 127.0.0.1:8443 ssl http2;", "ssl_certificate /d/cert.pem;", "ssl_certificate_key /d/key.pem;",
		"server 127.0.0.1:9000;", "keepalive 64;", "access_log off;", "worker_processes 1;", "ssl_prefer_server_ciphers on;"} {
		if !strings.Contains(old, want) {
			t.Errorf("nginx 1.22 config lacks %q:\n%s", want, old)
		}
	}
	if strings.Contains(old, "http2 on;") || strings.Count(old, "listen ") != 1 {
		t.Errorf("nginx 1.22 given http2 on; or a plain listener:\n%s", old)
	}
	if plain := nginxConfig("/d/nginx", 8443, 8080, 9000, c, v, true); !strings.Contains(plain, "listen 127.0.0.1:8080;") {
		t.Errorf("no plain listener:\n%s", plain)
	}
	for _, v := range [][3]int{{1, 25, 1}, {1, 26, 0}, {2, 0, 0}} {
		if c := nginxConfig("/d/nginx", 8443, 0, 9000, c, v, false); !strings.Contains(c, "listen 127.0.0.1:8443 ssl;\n        http2 on;") ||
			strings.Contains(c, "ssl_prefer_server_ciphers") {
			t.Errorf("nginx %v config:\n%s", v, c)
		}
	}
	if c := nginxConfig("/d/nginx", 8443, 0, 9000, c, [3]int{1, 25, 0}, false); !strings.Contains(c, "ssl http2;") {
		t.Errorf("nginx 1.25.0 config:\n%s", c)
	}
	if _, err := parseNginxVersion("nginx: command not found"); err == nil {
		t.Error("no version parsed")
	}
}

func TestEdgeConfig(t *testing.T) {
	c := certFiles{Cert: "/d/cert.pem", Key: "/d/key.pem"}
	quiet := edgeConfig(8443, 9090, 9000, c, true, false)
	for _, want := range []string{`public: "127.0.0.1:8443"`, `ops: "127.0.0.1:9090"`, `url: "http://127.0.0.1:9000", legacy: true`,
		`tls: {static: {cert_file: "/d/cert.pem", key_file: "/d/key.pem"}}`, "level: warn", "access: false"} {
		if !strings.Contains(quiet, want) {
			t.Errorf("config lacks %q:\n%s", want, quiet)
		}
	}
	if plain := edgeConfig(8443, 9090, 9000, c, false, false); strings.Contains(plain, "tls") {
		t.Errorf("plain config has a tls section:\n%s", plain)
	}
	if logged := edgeConfig(8443, 9090, 9000, c, true, true); !strings.Contains(logged, "level: info") || !strings.Contains(logged, "access: true") {
		t.Errorf("access-log config:\n%s", logged)
	}
}

func TestWriteCerts(t *testing.T) {
	f, err := writeCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(f.CA)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("the server certificate does not verify for 127.0.0.1: %v", err)
	}
	if leaf.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("key %v, want ECDSA", leaf.PublicKeyAlgorithm)
	}
	if st, _ := os.Stat(f.Key); st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", st.Mode())
	}
}
