#!/usr/bin/env bash
# Runs every fuzz target in the module for a bounded number of executions each.
#
# Budgets are execution counts, not durations: with a duration, go1.26's fuzz coordinator can
# report a spurious "context deadline exceeded" failure when the time is up (golang/go#75804,
# fixed in go1.27). FUZZEXECS sets the default budget; slow targets get their own below, sized
# to a few seconds each on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
default=${FUZZEXECS:-150000}
budget() {
  case "$1" in
    FuzzParse) echo $((default / 25)) ;;        # config: ~1k execs/s (YAML, files)
    FuzzInfoHeader) echo $((default / 5)) ;;    # tunnel: ~6k execs/s
    FuzzStampFast) echo $((default / 5)) ;;     # aggregate: ~4k execs/s (decodes each input twice)
    FuzzAgentVerify|FuzzBodyToken) echo $((default / 2)) ;;
    FuzzEngineAgainstNetHTTP) echo $((default / 50)) ;; # engine: ~2k execs/s (two servers, loopback)
    FuzzDirectAgainstReverseProxy) echo $((default / 50)) ;; # cellrouter: two proxied exchanges each
    *) echo "$default" ;;
  esac
}
status=0
while IFS=: read -r file name; do
  pkg=./$(dirname "$file")
  n=$(budget "$name")
  echo "== fuzz $pkg $name (${n} executions)"
  if ! go test -run='^$' -fuzz="^${name}\$" -fuzztime="${n}x" "$pkg"; then
    status=1
  fi
done < <(grep -rHoE --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)' . | sed -E 's/^\.\///; s/:func /:/' | sort -u)
exit $status
