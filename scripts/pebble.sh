#!/usr/bin/env bash
# Builds Pebble (the ACME test server) and pebble-challtestsrv from the Go module proxy
# (test/acme/pebble) once, and prints the directory holding both; later runs reuse them.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v2.10.1
cache=${EDGE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-kube}/pebble-$version
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [[ ! -x $cache/pebble || ! -x $cache/pebble-challtestsrv ]]; then
  echo "building pebble $version into $cache (cached afterwards)" >&2
  (cd test/acme/pebble && GOFLAGS=-mod=mod GOSUMDB=off go build -trimpath -o "$cache/" \
    github.com/letsencrypt/pebble/v2/cmd/pebble github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv)
fi
echo "$cache"
