#!/usr/bin/env bash
# Builds kube-apiserver v1.32.13 from the Go module proxy (test/kube/apiserver) once and prints its
# path; later runs reuse the binary. About 9 minutes the first time on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v1.32.13
cache=${EDGE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-kube}
bin=$cache/kube-apiserver-$version
if [[ ! -x $bin ]]; then
  mkdir -p "$cache"
  # Test processes of several packages may ask at once: one builds, the others wait for it.
  exec 9>"$cache/.lock"
  flock 9
fi
if [[ ! -x $bin ]]; then
  echo "building kube-apiserver $version into $cache (cached afterwards)" >&2
  pkg=k8s.io/component-base/version
  (cd test/kube/apiserver && GOFLAGS=-mod=mod GOSUMDB=off go build -trimpath -o "$bin.tmp" \
    -ldflags "-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=32 -X $pkg.gitTreeState=clean" \
    k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
