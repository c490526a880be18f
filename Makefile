GO ?= go
FUZZEXECS ?= 150000
# make bench BENCH_FLAGS=--quick for a short run
BENCH_FLAGS ?=

.PHONY: all build demo test vet cross unit fuzz fuzz-h1 bench soak deps clean dashboards rules

all: build

build:
	$(GO) build -buildvcs=auto -o bin/edge ./cmd/edge

# make demo DEMO_FLAGS='--listen 127.0.0.1:18080 --ops 127.0.0.1:19090' when 8080 or 9090 is taken.
# The demo (cmd/edge-demo, with its fake cells and login) runs bin/edge, the router binary, which
# links none of them.
demo: build
	$(GO) run ./cmd/edge-demo --edge bin/edge $(DEMO_FLAGS)

# Every test: static checks, unit and integration tests (real edge binary, real processes),
# then each fuzz target for a bounded number of executions (FUZZEXECS; see scripts/fuzz.sh).
test: deps vet cross unit fuzz

deps:
	./scripts/deps.sh redis-server=redis-server nginx=nginx-light wrk=wrk chromium=chromium etcd=etcd-server etcdctl=etcd-client sshd=openssh-server tmux=tmux haproxy=haproxy promtool=prometheus
	./scripts/kube-apiserver.sh >/dev/null  # built once (minutes), cached in ~/.cache/edge-kube
	./scripts/pebble.sh >/dev/null          # the ACME test server, built once, cached there too
	./scripts/helm.sh >/dev/null            # helm for the chart's tests, built once, cached there too
	./scripts/otelcol.sh >/dev/null         # the OpenTelemetry Collector of the tracing tests, the same way

vet:
	$(GO) vet ./...

# edge builds for the systems operators run it on besides Linux; what needs a Unix socket call
# lives in _unix.go files with a fallback beside it.
cross:
	GOOS=darwin GOARCH=arm64 $(GO) build ./...
	GOOS=windows GOARCH=amd64 $(GO) build ./...

unit:
	$(GO) test -race -count=1 -timeout 15m ./...

fuzz:
	FUZZEXECS=$(FUZZEXECS) ./scripts/fuzz.sh

# The long run of the HTTP/1.1 engine's differential fuzzers against net/http (make test runs
# each for a bounded number of executions, scripts/fuzz.sh): H1FUZZTIME each, 10 minutes unless
# set. h1's compare readings of requests and answers; the engine's, whole connections' answers;
# cellrouter's, what a client reads of a cell's answer read by edge itself or by ReverseProxy.
H1FUZZTIME ?= 10m
fuzz-h1:
	$(GO) test -run '^$$' -fuzz '^FuzzAgainstNetHTTP$$' -fuzztime $(H1FUZZTIME) ./h1/
	$(GO) test -run '^$$' -fuzz '^FuzzAnswerAgainstNetHTTP$$' -fuzztime $(H1FUZZTIME) ./h1/
	$(GO) test -run '^$$' -fuzz '^FuzzEngineAgainstNetHTTP$$' -fuzztime $(H1FUZZTIME) ./engine/
	$(GO) test -run '^$$' -fuzz '^FuzzDirectAgainstReverseProxy$$' -fuzztime $(H1FUZZTIME) ./cellrouter/

# Each make bench writes its results into a directory of its own, to compare two runs file by file.
BENCH_RESULTS ?= bench/results/$(shell date +%Y%m%d-%H%M%S)
# Expanded once here: as a recursive variable, each use would run date again, a second later.
BENCH_RESULTS := $(BENCH_RESULTS)

# The long-poll soak (bench/cmd/longpollsoak -results $(BENCH_RESULTS)) runs before edgebench,
# whose goals table reads its longpoll.json: 9,900 held polls, issue 18's goal (this machine's
# limit), in make's environment (the goal is stated with no GOGC or GOMEMLIMIT).
bench:
	mkdir -p $(BENCH_RESULTS)
	./scripts/deps.sh nginx=nginx-light wrk=wrk redis-server=redis-server h2load=nghttp2-client haproxy=haproxy
	$(GO) test -run '^$$' -bench . -benchmem ./tokens/ ./front/ ./cellrouter/ ./wire/ ./discovery/ ./aggregate/ ./h1/ ./engine/
	$(GO) run ./bench/cmd/longpollsoak -n 9900 -results $(BENCH_RESULTS)
	$(GO) run ./bench/cmd/loginflood -results $(BENCH_RESULTS)
	$(GO) run ./bench/cmd/edgebench --results $(BENCH_RESULTS) $(BENCH_FLAGS)
	$(GO) run ./bench/cmd/wsbench
	$(GO) run ./bench/cmd/tlsbench
	./scripts/deps.sh sshd=openssh-server && $(GO) run ./bench/cmd/sshbench
	$(GO) run ./bench/cmd/benchcharts -results $(BENCH_RESULTS)

# The chaos soak (bench/cmd/chaossoak; not part of make test or make bench): three edges, three
# cells, Redis and two agents under runner and workspace load while a fault script kills -9 and
# restarts them, has a cell cut an answer to a parked poll mid-body and exit, and has runners
# reset parked polls; 10 minutes of chaos (about 15 in all); chaos.md and chaos.json go into
# $(BENCH_RESULTS). make soak SOAK_FLAGS=-quick: 90 s of chaos (about 4 minutes in all).
SOAK_FLAGS ?=
soak:
	./scripts/deps.sh redis-server=redis-server
	$(GO) run ./bench/cmd/chaossoak -results $(BENCH_RESULTS) $(SOAK_FLAGS)

clean:
	rm -rf bin

# The Grafana dashboards (cmd/edge-dashboards): deploy/grafana/, and the same files in the chart,
# whose ConfigMap reads them (helm reads no file outside the chart).
dashboards:
	$(GO) run ./cmd/edge-dashboards -out deploy/grafana -chart deploy/helm/edge/dashboards

# The alert rules (cmd/edge-rules): deploy/prometheus/edge-rules.yaml and the chart's
# PrometheusRule, whose thresholds are values; cmd/edge-rules' tests run promtool on them.
rules:
	$(GO) run ./cmd/edge-rules -out deploy/prometheus -chart deploy/helm/edge
