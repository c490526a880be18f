#!/usr/bin/env bash
# Builds an OpenTelemetry Collector v0.161.0 (test/otelcol: the OTLP receiver, the file and debug
# exporters) from the Go module proxy once and prints its path; later runs reuse the binary. The
# tracing tests (test/integration/otelcol_test.go) send spans to it and read them from the file
# exporter's output. About 5 minutes the first time on 2 cores (an empty build cache).
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.161.0 # also in test/otelcol/main.go and go.mod
cache=${EDGE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-kube}
bin=$cache/otelcol-$version
if [[ ! -x $bin ]]; then
  mkdir -p "$cache"
  # Test processes of several packages may ask at once: one builds, the others wait for it.
  exec 9>"$cache/.lock-otelcol"
  flock 9
fi
if [[ ! -x $bin ]]; then
  echo "building otelcol $version into $cache (cached afterwards)" >&2
  (cd test/otelcol && GOFLAGS=-mod=mod GOSUMDB=off CGO_ENABLED=0 go build -trimpath -o "$bin.tmp" \
    -ldflags "-s -w" .)
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
