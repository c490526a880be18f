#!/usr/bin/env bash
# Builds Caddy (a peer of nginx and HAProxy in bench/cmd/edgebench) from the Go module proxy once
# and prints the binary's path; later runs reuse it. About 3 minutes the first time on 2 cores.
# Debian 12's caddy package is 2.6: building a current release compares edge with today's Caddy.
set -euo pipefail
version=v2.11.9
cache=${EDGE_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-bench}/caddy-$version
bin=$cache/caddy
if [[ ! -x $bin ]]; then
  mkdir -p "$cache"
  # Two benchmarks may ask at once: one builds, the other waits for it.
  exec 9>"$cache/.lock"
  flock 9
fi
if [[ ! -x $bin ]]; then
  echo "building caddy $version into $cache (cached afterwards)" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # go install pkg@version builds with Caddy's own go.mod and go.sum (checked against the
  # checksum database), outside any module of ours; GOTOOLCHAIN=local: fail rather than
  # download another Go. Caddy finds its version only as a dependency (xcaddy's builds): as the
  # main module it says "unknown" unless told.
  (cd "$tmp" && GOBIN=$tmp GOTOOLCHAIN=local go install -trimpath \
    -ldflags "-s -w -X github.com/caddyserver/caddy/v2.CustomVersion=$version" \
    "github.com/caddyserver/caddy/v2/cmd/caddy@$version")
  mv "$tmp/caddy" "$bin"
fi
echo "$bin"
