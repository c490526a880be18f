#!/usr/bin/env bash
# perrequest.sh [EDGE_BIN ...]: edge's CPU, system calls and context switches per request on the
# legacy route, for each edge binary given (default: ./cmd/edge built now), one after the other.
# wrk -t1 -c64 for $SECONDS_RUN s (default 5); edge and the upstream pinned to CPU 0, wrk to CPU 1.
# Needs wrk, perf (linux-perf) and taskset; loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
go build -o "$dir/upstream" ./bench/cmd/upstream
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then go build -o "$dir/edge" ./cmd/edge; bins=("$dir/edge"); fi
d=${SECONDS_RUN:-5}
cat >"$dir/edge.yaml" <<YAML
listen: {public: "127.0.0.1:18080", ops: "127.0.0.1:18081"}
cells:
  - {id: 1, url: "http://127.0.0.1:18091", legacy: true}
  - {id: 2, url: "http://127.0.0.1:18092"}
log: {level: warn}
YAML
url=http://127.0.0.1:18080/api/v4/runners/router/discovery
for bin in "${bins[@]}"; do
	taskset -c 0 "$dir/upstream" --listen 127.0.0.1:18091,127.0.0.1:18092 >/dev/null 2>&1 & up=$!
	taskset -c 0 "$bin" serve --config "$dir/edge.yaml" >"$dir/edge.log" 2>&1 & edge=$!
	for _ in $(seq 50); do curl -fs -o /dev/null http://127.0.0.1:18081/readyz && break; sleep 0.1; done
	taskset -c 1 wrk -t1 -c64 -d2s "$url" >/dev/null # warm-up
	cpu0=$(awk '{print $14+$15}' /proc/$edge/stat)
	cs0=$(awk '/ctxt_switches/{s+=$2} END{print s}' /proc/$edge/task/*/status)
	perf stat -e raw_syscalls:sys_enter -p $edge -o "$dir/perf.txt" -- sleep "$d" >/dev/null 2>&1 & ps=$!
	out=$(taskset -c 1 wrk -t1 -c64 -d${d}s "$url")
	wait $ps
	cpu1=$(awk '{print $14+$15}' /proc/$edge/stat)
	cs1=$(awk '/ctxt_switches/{s+=$2} END{print s}' /proc/$edge/task/*/status)
	req=$(awk '/requests in/{print $1}' <<<"$out")
	rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
	sys=$(awk '/raw_syscalls/{gsub(",","",$1); print $1}' "$dir/perf.txt")
	awk -v b="$bin" -v rps="$rps" -v c="$((cpu1 - cpu0))" -v r="$req" -v s="$sys" -v cs="$((cs1 - cs0))" \
		'BEGIN{printf "%s: %s req/s, %.1f us CPU/req (clock ticks of 10 ms), %.2f syscalls/req, %.2f context switches/req\n", b, rps, c*10000/r, s/r, cs/r}'
	kill $edge $up; wait $edge $up 2>/dev/null || true
done
