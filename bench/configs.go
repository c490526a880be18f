package bench

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// NginxConfig is a plain, fair reverse proxy: one worker, keep-alive to the upstream, no access
// log, every path under prefix so it reads no system file. The transfer case's bodies stream as
// edge streams them, so its 10 MiB compare like with like: on /upload, client_max_body_size 0
// lifts the 1 MiB default that would answer the upload 413 and proxy_request_buffering off passes
// the body on as it arrives instead of spooling it first; on /bytes, proxy_max_temp_file_size 0
// keeps a download in nginx's memory buffers instead of spilling it to a temporary file when the
// client reads slower than the upstream writes. Every other path (the GET and 512 B POST cases)
// has nginx's defaults: unbuffered small POSTs stalled (p99 107 ms against 10 ms buffered).
func NginxConfig(prefix string, listenPort, upstreamPort int) string {
	return NginxHead(prefix) + fmt.Sprintf(`    upstream bench_upstream {
        server 127.0.0.1:%[2]d;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:%[1]d;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        location / {
            proxy_pass http://bench_upstream;
        }
        location = /upload {
            proxy_pass http://bench_upstream;
            client_max_body_size 0;
            proxy_request_buffering off;
        }
        location = /bytes {
            proxy_pass http://bench_upstream;
            proxy_max_temp_file_size 0;
        }
    }
}
`, listenPort, upstreamPort)
}

// NginxHead is the start of every bench nginx config, up to the http block's contents: one
// worker, no access log, and every path under prefix so that nginx reads no system file.
func NginxHead(prefix string) string {
	return fmt.Sprintf(`worker_processes 1;
error_log %[1]s/error.log warn;
pid %[1]s/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
`, prefix)
}

// EdgeAgents is what the tunnel cases add to an edge's config; the zero value adds nothing, so
// the other cases run on the config they always had.
type EdgeAgents struct {
	InternalPort       int    // 0: no internal listener (one edge: in-memory registry)
	RedisAddr          string // "": in-memory registry
	InternalSecretFile string // the edges' shared secret; with RedisAddr
	AgentKeyFile       string // HS256 secret of agent tokens; "": no agent connects to this edge
	APISecretFile      string // HS256 secret of the API for GitLab; "": no API
}

// EdgeOptions is what a case changes in an edge's config; the zero value changes nothing, so the
// cases that need none of it run on the config they always had.
type EdgeOptions struct {
	Agents EdgeAgents
	// HTTP1 is listen.http1, who reads HTTP/1.1 on the public listener; "" leaves it out, so
	// edge uses its default (its own engine).
	HTTP1 string
}

// HTTP1NetHTTP is the listen.http1 value that makes edge serve its public listener with
// net/http's server, as before its own engine: the edge-nethttp case's peer.
const HTTP1NetHTTP = "net/http"

// agentWait bounds how long a tunnel request waits for its agent, short so that an agent lost in
// the middle of a run shows as errors instead of stalls.
const agentWait = "5s"

// EdgeConfig is edge's config for the benchmark: cell 1 (legacy) and cells 2 and 3 on the three
// listeners of the one upstream process, job JWT verification with the bench key, and the agent
// sections and HTTP/1.1 engine of o. The log is edge's default: level info, access log on (log.access unset), one
// line per request into the process's log file, as issue 18's goals are stated; at level warn
// edge would write no access line at all.
func EdgeConfig(publicPort, opsPort int, upstreamPorts [3]int, jwtPubFile, issuer, audience, kid string, o EdgeOptions) string {
	a := o.Agents
	var b strings.Builder
	fmt.Fprintf(&b, `listen: {public: "127.0.0.1:%d", ops: "127.0.0.1:%d"`, publicPort, opsPort)
	if a.InternalPort != 0 {
		fmt.Fprintf(&b, `, internal: "127.0.0.1:%[1]d", advertise_internal: "http://127.0.0.1:%[1]d"`, a.InternalPort)
	}
	if o.HTTP1 != "" {
		fmt.Fprintf(&b, `, http1: %s`, strconv.Quote(o.HTTP1))
	}
	fmt.Fprintf(&b, `}
cells:
  - {id: 1, url: "http://127.0.0.1:%d", legacy: true}
  - {id: 2, url: "http://127.0.0.1:%d"}
  - {id: 3, url: "http://127.0.0.1:%d"}
tokens:
  job_jwt: {verify: true, keys: [{kid: %s, alg: RS256, file: %s}], issuer: %s, audience: %s}
log: {level: info}
`, upstreamPorts[0], upstreamPorts[1], upstreamPorts[2],
		strconv.Quote(kid), strconv.Quote(jwtPubFile), strconv.Quote(issuer), strconv.Quote(audience))
	if a.RedisAddr != "" {
		fmt.Fprintf(&b, "registry: {redis: {addr: %s}, ttl: 5m, refresh: 4m}\n", strconv.Quote(a.RedisAddr))
	}
	if a.InternalSecretFile != "" {
		fmt.Fprintf(&b, "internal: {secret_file: %s}\n", strconv.Quote(a.InternalSecretFile))
	}
	switch {
	case a.AgentKeyFile != "":
		fmt.Fprintf(&b, "agents: {keys: [{alg: HS256, file: %s}], wait: %s}\n", strconv.Quote(a.AgentKeyFile), agentWait)
	case a.APISecretFile != "":
		fmt.Fprintf(&b, "agents: {wait: %s}\n", agentWait)
	}
	if a.APISecretFile != "" {
		fmt.Fprintf(&b, "gitlab_api: {secret_file: %s}\n", strconv.Quote(a.APISecretFile))
	}
	return b.String()
}

// WrkScript sets a static request for wrk: with no request() function wrk builds it once, so the
// script costs nothing per request.
func WrkScript(method string, headers map[string]string, body string) string {
	var b strings.Builder
	b.WriteString("wrk.method = " + LuaQuote(method) + "\n")
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		b.WriteString("wrk.headers[" + LuaQuote(k) + "] = " + LuaQuote(headers[k]) + "\n")
	}
	if body != "" {
		b.WriteString("wrk.body = " + LuaQuote(body) + "\n")
	}
	return b.String()
}

// LuaQuote writes s as a Lua 5.1 string literal (wrk embeds LuaJIT), escaping every byte that is
// not printable ASCII as \ddd.
func LuaQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
