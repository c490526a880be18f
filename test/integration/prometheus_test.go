package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/tokens"
)

// promServer is a real Prometheus (Debian's package) scraping edges with edge's rules loaded.
type promServer struct {
	url string
}

// startPrometheus runs prometheus scraping targets every second, evaluating rules every second,
// until the test ends.
func startPrometheus(t *testing.T, ruleFile string, targets ...string) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not found: ./scripts/deps.sh promtool=prometheus installs it (make test does)")
	}
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, target := range targets {
		quoted[i] = fmt.Sprintf("%q", target)
	}
	conf := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: edge
    static_configs: [{targets: [%s]}]
`, ruleFile, strings.Join(quoted, ", "))
	confFile := filepath.Join(dir, "prometheus.yml")
	writeFile(t, confFile, []byte(conf))
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+confFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("prometheus's log:\n%s", b)
		}
	})
	p := &promServer{url: "http://" + addr}
	poll.Until(t, 30*time.Second, "prometheus ready", func() bool {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// api GETs an API path and decodes its data; a query Prometheus refuses is an error.
func (p *promServer) api(path string, query url.Values, data any) error {
	resp, err := http.Get(p.url + path + "?" + query.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return err
	}
	if out.Status != "success" {
		return fmt.Errorf("%s %s: %s", path, query.Encode(), out.Error)
	}
	return json.Unmarshal(out.Data, data)
}

// alertState is an alert's state with the given label, "" when it is not active.
func (p *promServer) alertState(t *testing.T, name, label, value string) string {
	t.Helper()
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.api("/api/v1/alerts", nil, &data); err != nil {
		t.Fatal(err)
	}
	for _, a := range data.Alerts {
		if a.Labels["alertname"] == name && a.Labels[label] == value {
			return a.State
		}
	}
	return ""
}

// TestPrometheusAlertsOnTwoEdges: a real Prometheus scrapes two real edges with edge's rules
// loaded (deploy/prometheus/edge-rules.yaml as it is). A cell killed: EdgeCellDown goes pending,
// then firing after its 1m, then resolves once the cell is back. Every metric a rule or a
// dashboard panel names exists on the running edges, and every panel's query is one Prometheus
// takes.
func TestPrometheusAlertsOnTwoEdges(t *testing.T) {
	t.Parallel()
	root, _ := repoRoot()
	quiet := slog.New(slog.DiscardHandler)
	cell1, err := cellsim.NewServer("", cellsim.Options{CellID: 1, Legacy: true, JobIDBase: jobIDBase(1), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cell1.Close() })
	cell2Addr := freeAddr(t)
	cell2, err := cellsim.NewServer(cell2Addr, cellsim.Options{CellID: 2, JobIDBase: jobIDBase(2), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cell2.Close() })
	controller := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"admitted":true,"reason":""}`)
	}))
	t.Cleanup(controller.Close)

	// Edge 1 asks a CA that is not there for its certificate (its ACME metrics), edge 2 serves a
	// static one (its expiry): the certificate rules have something to read.
	dir := t.TempDir()
	pki := writeKubePKI(t, dir)
	n := 0
	fast := &healthConfig{Interval: "500ms", Timeout: "250ms", UnhealthyAfter: 2, HealthyAfter: 1}
	c := newTunnelClusterWith(t, 2, func(cfg *edgeConfig) {
		n++
		cfg.Cells = []cellConfig{{ID: 1, URL: cell1.URL, Legacy: true, Health: fast}, {ID: 2, URL: "http://" + cell2Addr, Health: fast,
			IDRanges: []string{fmt.Sprintf("%d-%d", jobIDBase(2), jobIDBase(3)-1)}}}
		cfg.Runners = &runnersConfig{Admission: &admissionConfig{Mode: "enabled",
			Controllers: []controllerConfig{{Name: "policy", URL: controller.URL, Timeout: "2s", OnError: "admit"}}}}
		if n == 1 {
			cfg.TLS = &tlsConfig{ACME: &acmeConfig{CA: "https://127.0.0.1:9/directory", Domains: []string{"edge.test"},
				Storage: filepath.Join(dir, "certs")}}
		} else {
			cfg.TLS = &tlsConfig{Static: &staticTLSConfig{CertFile: pki.certFile, KeyFile: pki.keyFile}}
		}
	})
	e2 := c.edges[1]
	var targets []string
	for _, e := range c.edges {
		targets = append(targets, strings.TrimPrefix(e.OpsURL, "http://"))
	}
	prom := startPrometheus(t, filepath.Join(root, "deploy/prometheus/edge-rules.yaml"), targets...)

	// A runner's job through edge 2: routing, the long poll, admission, the queue signals.
	client := httpsClient(t, pki.caFile, false)
	runner := routableToken(t, "glrt-t1_", 40, tokens.Keys{}.Set(tokens.KeyCell, 2).Set(tokens.KeyOrganization, 1))
	cell2.AddJob()
	ask := func() int {
		body := `{"token":"` + runner + `","info":{"executor":"shell","platform":"linux","architecture":"amd64"}}`
		resp, err := client.Post("https://"+strings.TrimPrefix(e2.PublicURL, "http://")+"/api/v4/jobs/request", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := ask(); status != http.StatusCreated {
		t.Fatalf("the runner's poll through edge 2: %d, want 201 and the job", status)
	}

	// The cell dies: pending, then firing once it has been down for the rule's 1m.
	died := time.Now()
	cell2.Close()
	if status := ask(); status != http.StatusServiceUnavailable && status != http.StatusBadGateway {
		t.Errorf("a poll for the dead cell: %d, want edge's 503 or 502", status)
	}
	var pendingAfter, firingAfter time.Duration
	poll.UntilState(t, 30*time.Second, "EdgeCellDown pending for cell 2", func() (bool, string) {
		s := prom.alertState(t, "EdgeCellDown", "cell", "2")
		return s == "pending" || s == "firing", s
	})
	pendingAfter = time.Since(died)
	poll.UntilState(t, 100*time.Second, "EdgeCellDown firing for cell 2", func() (bool, string) {
		s := prom.alertState(t, "EdgeCellDown", "cell", "2")
		return s == "firing", s
	})
	firingAfter = time.Since(died)
	if firingAfter < time.Minute {
		t.Errorf("EdgeCellDown fired %v after the cell died, before its for: 1m", firingAfter)
	}
	if s := prom.alertState(t, "EdgeCellDown", "cell", "1"); s != "" {
		t.Errorf("EdgeCellDown for cell 1, which is up: %s", s)
	}
	t.Logf("cell 2 killed: EdgeCellDown pending after %v, firing after %v", pendingAfter.Round(time.Second), firingAfter.Round(time.Second))

	// Back: resolved.
	back, err := cellsim.NewServer(cell2Addr, cellsim.Options{CellID: 2, JobIDBase: jobIDBase(2) + 100, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	returned := time.Now()
	poll.UntilState(t, 30*time.Second, "EdgeCellDown resolved", func() (bool, string) {
		s := prom.alertState(t, "EdgeCellDown", "cell", "2")
		return s == "", s
	})
	t.Logf("cell 2 back: EdgeCellDown resolved after %v", time.Since(returned).Round(time.Second))
	// Edge 1's CA is not there: the order its first handshake for edge.test makes fails, and the
	// alert on that fires at once.
	// (certmagic holds such a handshake while it tries again; the first failure is counted at once.)
	asked := time.Now()
	dialer := &tls.Dialer{Config: &tls.Config{ServerName: "edge.test", InsecureSkipVerify: true}}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if conn, err := dialer.DialContext(ctx, "tcp", strings.TrimPrefix(c.edges[0].PublicURL, "http://")); err == nil {
		conn.Close()
		t.Errorf("edge 1 finished a handshake for edge.test without a certificate")
	}
	poll.UntilState(t, 30*time.Second, "EdgeACMEFailing for edge 1", func() (bool, string) {
		s := prom.alertState(t, "EdgeACMEFailing", "instance", targets[0])
		return s == "firing", s
	})
	t.Logf("an order refused: EdgeACMEFailing firing after %v", time.Since(asked).Round(time.Second))
	if s := prom.alertState(t, "EdgeACMEFailing", "instance", targets[1]); s != "" {
		t.Errorf("EdgeACMEFailing for edge 2, which has no ACME: %s", s)
	}

	// Every metric the rules and the dashboards name is one the edges export.
	var names []string
	if err := prom.api("/api/v1/label/__name__/values", nil, &names); err != nil {
		t.Fatal(err)
	}
	exprs := ruleExprs(t, filepath.Join(root, "deploy/prometheus/edge-rules.yaml"))
	panels := panelExprs(t, filepath.Join(root, "deploy/grafana"))
	metricName := regexp.MustCompile(`\b(?:edge|process)_[a-z0-9_]+\b`)
	for _, expr := range append(slices.Clone(exprs), panels...) {
		for _, m := range metricName.FindAllString(expr, -1) {
			if !slices.Contains(names, m) {
				t.Errorf("%s, named by %q, is not exported by the running edges", m, expr)
			}
		}
	}
	// Every panel's query is one Prometheus takes, its variables as Grafana fills them.
	vars := strings.NewReplacer("$__rate_interval", "1m", "$__range", "5m", "$job", ".+", "$instance", ".+", "$cell", "2")
	for _, expr := range panels {
		var result json.RawMessage
		if err := prom.api("/api/v1/query", url.Values{"query": {vars.Replace(expr)}}, &result); err != nil {
			t.Errorf("panel query refused: %v", err)
		}
	}
	t.Logf("%d rule expressions and %d panel queries checked against %d metric names", len(exprs), len(panels), len(names))
}

func ruleExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	return out
}

// panelExprs are the queries of every panel of the dashboards in dir.
func panelExprs(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) == 0 {
		t.Fatalf("no dashboards in %s", dir)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "expr" {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d any
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walk(d)
	}
	return out
}
