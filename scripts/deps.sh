#!/usr/bin/env bash
# Installs the Debian packages the tests and benchmarks start for real, when they are absent.
set -euo pipefail
need=()
for pair in "$@"; do
  cmd=${pair%%=*}; pkg=${pair#*=}
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
echo "installing: ${need[*]}"
# The tests start their own redis-server and nginx: keep the packages from starting system services
# (which could fail, and fail the install, on a machine without an init system or with port 80 taken).
policy=/usr/sbin/policy-rc.d
added_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy" && added_policy=1
fi
cleanup() { [ -n "$added_policy" ] && $sudo rm -f "$policy"; return 0; }
trap cleanup EXIT
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
