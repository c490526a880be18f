package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

const upstreamBody = 1024

// serveUpstream is the upstream's own process (tlsbench -serve-upstream ADDR): every request
// answered with 1 KiB, like wsbench's.
func serveUpstream(addr string) error {
	body := bytes.Repeat([]byte("x"), upstreamBody)
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	}))
}

// startTimeout is how long a server has to answer its first check.
const startTimeout = 20 * time.Second

// edgeConfig: one legacy cell (the upstream), the static certificate, warnings only. accessLog
// false sets log.access: false; true sets log.level: info, because edge writes its access log at
// info and a warn level would drop it (access: true at level warn logs nothing).
// withTLS false leaves the tls section out: plain HTTP, the reference.
func edgeConfig(public, ops, upstream int, c certFiles, withTLS, accessLog bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: {public: \"127.0.0.1:%d\", ops: \"127.0.0.1:%d\"}\n", public, ops)
	fmt.Fprintf(&b, "cells: [{id: 1, url: \"http://127.0.0.1:%d\", legacy: true}]\n", upstream)
	if withTLS {
		fmt.Fprintf(&b, "tls: {static: {cert_file: %q, key_file: %q}}\n", c.Cert, c.Key)
	}
	if accessLog {
		b.WriteString("log: {level: info, format: json, access: true}\n")
	} else {
		b.WriteString("log: {level: warn, format: json, access: false}\n")
	}
	return b.String()
}

// nginxVersion reads `nginx -v` ("nginx version: nginx/1.22.1", on stderr).
func nginxVersion(bin string) ([3]int, error) {
	out, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return [3]int{}, fmt.Errorf("%s -v: %v: %s", bin, err, out)
	}
	return parseNginxVersion(string(out))
}

var nginxVersionRE = regexp.MustCompile(`nginx/(\d+)\.(\d+)\.(\d+)`)

func parseNginxVersion(s string) ([3]int, error) {
	m := nginxVersionRE.FindStringSubmatch(s)
	if m == nil {
		return [3]int{}, fmt.Errorf("no nginx version in %q", strings.TrimSpace(s))
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, nil
}

// nginxConfig is a TLS-terminating reverse proxy as fair to nginx as edge's setup is to edge: one
// worker, the same certificate, HTTP/2 and HTTP/1.1, keep-alive to the upstream (64), no access
// log. nginx 1.25.1 and later take `http2 on;`, older ones (Debian 12's 1.22) `listen ... http2`.
// keepalive_requests is raised from nginx's 1000 (edge has no such limit): at 1000 nginx would
// close the client's connection, and every new one is a full handshake. serverPrefers makes
// nginx choose the TLS 1.3 cipher suite in the order Go's server does on hardware with AES
// (AES-128-GCM first), instead of the client's (OpenSSL clients list AES-256-GCM first), so
// that both servers run the same cipher. plainPort, when not 0, is a second server, without TLS,
// in the same worker: the reference.
func nginxConfig(prefix string, port, plainPort, upstream int, c certFiles, version [3]int, serverPrefers bool) string {
	listen := fmt.Sprintf("listen 127.0.0.1:%d ssl http2;", port)
	if version[0] > 1 || (version[0] == 1 && (version[1] > 25 || (version[1] == 25 && version[2] >= 1))) {
		listen = fmt.Sprintf("listen 127.0.0.1:%d ssl;\n        http2 on;", port)
	}
	ciphers := ""
	if serverPrefers {
		ciphers = "\n        ssl_prefer_server_ciphers on;" +
			"\n        ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256;"
	}
	plain := ""
	if plainPort != 0 {
		plain = fmt.Sprintf(`
    server {
        listen 127.0.0.1:%d;
        keepalive_requests 1000000;
        location / {
            proxy_pass http://bench_upstream;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }`, plainPort)
	}
	return bench.NginxHead(prefix) + fmt.Sprintf(`    upstream bench_upstream {
        server 127.0.0.1:%[3]d;
        keepalive 64;
        keepalive_requests 1000000;
    }
    server {
        %[4]s
        ssl_certificate %[5]s;
        ssl_certificate_key %[6]s;
        ssl_protocols TLSv1.2 TLSv1.3;%[7]s
        keepalive_requests 1000000;
        location / {
            proxy_pass http://bench_upstream;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }%[8]s
}
`, prefix, port, upstream, listen, c.Cert, c.Key, ciphers, plain)
}

// checkTLS fetches / over TLS, verifying the certificate with the bench CA, once with HTTP/1.1
// and once with HTTP/2, and wants 200 with the upstream's whole body each time: the server
// serves the certificate and both protocols, and proxies to the upstream.
func checkTLS(url string, caFile string) error {
	pemCA, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
		var p http.Protocols
		if proto == "HTTP/2.0" {
			p.SetHTTP2(true)
		} else {
			p.SetHTTP1(true)
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Protocols: &p}
		c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			tr.CloseIdleConnections()
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		switch {
		case err != nil:
			return err
		case resp.StatusCode != 200:
			return fmt.Errorf("%s %s: %s", proto, url, resp.Status)
		case resp.Proto != proto:
			return fmt.Errorf("asked %s, got %s", proto, resp.Proto)
		case len(b) != upstreamBody:
			return fmt.Errorf("%s %s: %d bytes, want %d", proto, url, len(b), upstreamBody)
		}
	}
	return nil
}

// checkPlain wants 200 and the upstream's whole body from a plain-HTTP url.
func checkPlain(url string) error {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return err
	case resp.StatusCode != 200:
		return fmt.Errorf("%s: %s", url, resp.Status)
	case len(b) != upstreamBody:
		return fmt.Errorf("%s: %d bytes, want %d", url, len(b), upstreamBody)
	}
	return nil
}
