#!/usr/bin/env bash
# Runs every fuzz target in the module for a short bounded time each (FUZZTIME, default 8s).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-8s}
status=0
while IFS=: read -r file name; do
  pkg=./$(dirname "$file")
  echo "== fuzz $pkg $name ($fuzztime)"
  if ! go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$pkg"; then
    status=1
  fi
done < <(grep -rHoE --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)' . | sed -E 's/^\.\///; s/:func /:/' | sort -u)
exit $status
