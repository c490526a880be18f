#!/usr/bin/env bash
# Builds the helm v3.22.0 client from the Go module proxy (test/helm) once and prints its path;
# later runs reuse the binary. The chart tests (test/integration/helm_test.go) lint and render
# deploy/helm/edge with it. A few minutes the first time on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v3.22.0
cache=${EDGE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-kube}
bin=$cache/helm-$version
if [[ ! -x $bin ]]; then
  mkdir -p "$cache"
  # Test processes of several packages may ask at once: one builds, the others wait for it.
  exec 9>"$cache/.lock-helm"
  flock 9
fi
if [[ ! -x $bin ]]; then
  echo "building helm $version into $cache (cached afterwards)" >&2
  # What helm's own Makefile stamps: its version, and the Kubernetes version of its client
  # modules (k8s.io/* v0.37), which `helm template` and `helm lint` assume without --kube-version.
  ldflags=(-s -w
    -X helm.sh/helm/v3/internal/version.version=$version
    -X helm.sh/helm/v3/internal/version.gitTreeState=clean
    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37
    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37)
  (cd test/helm && GOFLAGS=-mod=mod GOSUMDB=off CGO_ENABLED=0 go build -trimpath -o "$bin.tmp" \
    -ldflags "${ldflags[*]}" helm.sh/helm/v3/cmd/helm)
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
