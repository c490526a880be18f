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
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
