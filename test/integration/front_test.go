package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"

	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/tokens"
)

// recordingCell answers every request 200 with X-Cell and keeps what it saw. It also speaks
// h2c, with the Upgrade mechanism: if an h2c upgrade ever reached it, it would switch protocols.
type recordingCell struct {
	id  uint64
	srv *httptest.Server
	mu  sync.Mutex
	got []cellRequest
}

type cellRequest struct {
	method, rawPath string
	header          http.Header
	host            string
}

func startRecordingCell(t *testing.T, id uint64) *recordingCell {
	t.Helper()
	c := &recordingCell{id: id}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		c.mu.Lock()
		c.got = append(c.got, cellRequest{method: r.Method, rawPath: r.URL.EscapedPath(), header: r.Header.Clone(), host: r.Host})
		c.mu.Unlock()
		w.Header().Set("X-Cell", strconv.FormatUint(id, 10))
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		io.WriteString(w, "cell "+strconv.FormatUint(id, 10)+"\n")
	})
	c.srv = httptest.NewServer(h2c.NewHandler(h, &http2.Server{}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *recordingCell) take() []cellRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.got
	c.got = nil
	return out
}

// frontEnv is one edge in front of three recording cells, with agents and the API for GitLab
// configured, and its config file for `edge explain`.
type frontEnv struct {
	t        *testing.T
	edge     *edgeProc
	cells    map[uint64]*recordingCell
	apiToken string
}

func newFrontEnv(t *testing.T, configure func(*edgeConfig)) *frontEnv {
	t.Helper()
	dir := t.TempDir()
	f := &frontEnv{t: t, cells: map[uint64]*recordingCell{}}
	cfg := baseConfig()
	for _, id := range []uint64{1, 2, 3} {
		c := startRecordingCell(t, id)
		f.cells[id] = c
		cfg.Cells = append(cfg.Cells, cellConfig{ID: id, URL: c.srv.URL, Legacy: id == 1, IDRanges: cellRanges(id)})
	}
	secret := func(name string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Repeat(name[:1], 40)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfg.Agents = &agentsConfig{Keys: []keyConfig{{Alg: "HS256", File: secret("agent.key")}}, Wait: "1s"}
	cfg.GitLabAPI = &secretConfig{SecretFile: secret("gitlab-api.key")}
	cfg.Log = logConfig{Level: "info", Format: "text"}
	if configure != nil {
		configure(&cfg)
	}
	f.edge = startEdge(t, cfg)
	tok, err := tokens.MintGitLabAPIToken([]byte(strings.Repeat("g", 40)), "gitlab", "gitlab-kas", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.apiToken = tok
	return f
}

// frontRow is one request of the table: sent to `edge explain` and to `edge serve`.
type frontRow struct {
	name     string
	method   string
	path     string // raw, as sent
	headers  []string
	body     string
	ctype    string
	wantCell uint64 // the cell it must reach (0: none)
	// explainBody is part of what explain must say of the body.
	explainBody string
	wantStatus  int // the status it must get (0: the cell's 200, or not checked)
	// cellSees checks what the cell received, for rows that reach one.
	cellSees func(t *testing.T, r cellRequest)
}

// served is what `edge serve` did with a row: its status, the route and cell of its access log
// line, and which cells saw it.
type served struct {
	status int
	route  string
	cell   string
	cells  []uint64
	header http.Header
	body   string
	seen   map[uint64][]cellRequest
}

// explained is `edge explain`'s answer for a row.
type explained struct {
	BodyNote string  `json:"body"`
	Route    string  `json:"route"`
	Cell     float64 `json:"cell"`
	Status   int     `json:"status"`
	Cause    string  `json:"cause"`
}

func (f *frontEnv) explain(t *testing.T, row frontRow) explained {
	t.Helper()
	args := []string{"explain", "--config", f.edge.ConfigPath, "-X", row.method}
	for _, h := range row.headers {
		args = append(args, "-H", h)
	}
	if row.ctype != "" {
		args = append(args, "-H", "Content-Type: "+row.ctype)
	}
	if row.body != "" {
		args = append(args, "-d", row.body)
	}
	args = append(args, f.edge.PublicURL+row.path)
	stdout, stderr, code := runEdge(t, args...)
	if code != 0 {
		t.Fatalf("edge explain: exit %d: %s", code, stderr)
	}
	var e explained
	if err := json.Unmarshal([]byte(stdout), &e); err != nil {
		t.Fatalf("explain output: %v\n%s", err, stdout)
	}
	return e
}

// serve sends a row and reads the route and cell of its access log line.
func (f *frontEnv) serve(t *testing.T, row frontRow) served {
	t.Helper()
	s := f.send(t, row)
	line := f.accessLine(t, s.header.Get("X-Request-Id"))
	s.route = field(line, "route")
	s.cell = field(line, "cell")
	return s
}

// send sends a row over a raw connection, so the path and headers go exactly as written.
func (f *frontEnv) send(t *testing.T, row frontRow) served {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.edge.PublicURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", row.method, row.path, strings.TrimPrefix(f.edge.PublicURL, "http://"))
	for _, h := range row.headers {
		fmt.Fprintf(&b, "%s\r\n", h)
	}
	if row.ctype != "" {
		fmt.Fprintf(&b, "Content-Type: %s\r\n", row.ctype)
	}
	if row.body != "" || row.method == "POST" || row.method == "PUT" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(row.body))
	}
	b.WriteString("Connection: close\r\n\r\n" + row.body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", row.method, row.path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := served{status: resp.StatusCode, header: resp.Header, body: string(body), seen: map[uint64][]cellRequest{}}
	for id, c := range f.cells {
		if got := c.take(); len(got) > 0 {
			s.cells = append(s.cells, id)
			s.seen[id] = got
		}
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("%s %s: no X-Request-Id in the answer", row.method, row.path)
	}
	return s
}

// accessLine waits for the access log line of a request id.
func (f *frontEnv) accessLine(t *testing.T, id string) string {
	t.Helper()
	var line string
	poll.Until(t, 10*time.Second, "the access log line of request "+id, func() bool {
		for l := range strings.SplitSeq(f.edge.out.String(), "\n") {
			if strings.Contains(l, "msg=access") && strings.Contains(l, "request_id="+id) {
				line = l
				return true
			}
		}
		return false
	})
	return line
}

var fieldPattern = regexp.MustCompile(`(?:^| )([a-z_]+)=("(?:[^"\\]|\\.)*"|\S*)`)

// field reads one key of a text-format log line.
func field(line, key string) string {
	for _, m := range fieldPattern.FindAllStringSubmatch(line, -1) {
		if m[1] == key {
			if v, err := strconv.Unquote(m[2]); err == nil {
				return v
			}
			return m[2]
		}
	}
	return ""
}

// frontRows are requests over every route, every token location and the attack shapes of the
// header and path rules.
func frontRows(t *testing.T, apiToken string) []frontRow {
	r2, r3 := runnerToken(t, 2), runnerToken(t, 3)
	other2 := routableToken(t, "glrt-", 77, tokens.Keys{}.Set(tokens.KeyCell, 2).Set(tokens.KeyOrganization, 1))
	pat2 := routableToken(t, "glpat-", 78, tokens.Keys{}.Set(tokens.KeyCell, 2).Set(tokens.KeyOrganization, 1))
	noCell := routableToken(t, "glrt-", 79, tokens.Keys{}.Set(tokens.KeyOrganization, 1))
	now := time.Now()
	raw, err := tokens.MintJobJWT(tokens.MintJobOptions{
		Key: demoPrivateKey(t), Algorithm: "RS256", KID: jwtKID, Issuer: jwtIssuer, Audience: jwtAudience,
		Keys: tokens.Keys{}.Set(tokens.KeyCell, 2), JobID: 42, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	jwt2 := "glcbt-" + raw
	api := "Authorization: Bearer " + apiToken
	h2c := []string{"Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"}
	return []frontRow{
		{name: "no token", wantCell: 1, method: "GET", path: "/api/v4/runners/router/discovery"},
		{name: "RUNNER-TOKEN", wantCell: 2, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"RUNNER-TOKEN: " + r2}},
		{name: "JOB-TOKEN routable", wantCell: 3, method: "GET", path: "/api/v4/jobs/7/artifacts", headers: []string{"JOB-TOKEN: " + r3}},
		{name: "PRIVATE-TOKEN", wantCell: 2, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"PRIVATE-TOKEN: " + pat2}},
		{name: "Authorization Bearer", wantCell: 3, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"Authorization: Bearer " + r3}},
		{name: "query token", wantCell: 2, method: "GET", path: "/api/v4/runners/router/discovery?token=" + r2},
		{name: "query job_token", wantCell: 3, method: "GET", path: "/api/v4/jobs/7/artifacts?job_token=" + r3},
		{name: "query private_token", wantCell: 2, method: "GET", path: "/api/v4/runners/router/discovery?private_token=" + r2},
		{name: "JSON body", wantCell: 3, method: "POST", path: "/api/v4/runners/verify", ctype: "application/json", body: `{"token":"` + r3 + `"}`, explainBody: "read: the whole body"},
		{name: "large body, header token", wantCell: 2, method: "POST", path: "/api/v4/jobs/request", ctype: "application/json", headers: []string{"RUNNER-TOKEN: " + r2},
			body: `{"token":"` + r2 + `","pad":"` + strings.Repeat("x", 40<<10) + `"}`, explainBody: "larger than routing.body_token_limit; streamed unread"},
		{name: "form body", wantCell: 2, method: "POST", path: "/api/v4/jobs/request", ctype: "application/x-www-form-urlencoded", body: "token=" + r2 + "&last_update=x"},
		{name: "JSON body, wrong type", wantCell: 1, method: "POST", path: "/api/v4/jobs/request", ctype: "text/plain", body: `{"token":"` + r3 + `"}`, explainBody: "Content-Type is not"},
		{name: "body on a trace", wantCell: 1, method: "PATCH", path: "/api/v4/jobs/9/trace", ctype: "application/json", body: `{"token":"` + r3 + `"}`, explainBody: "never carries its token in the body"},
		{name: "job JWT", wantCell: 2, method: "GET", path: "/api/v4/jobs/42/artifacts", headers: []string{"JOB-TOKEN: " + jwt2}},
		{name: "job id range cell 2", wantCell: 2, method: "GET", path: "/api/v4/jobs/2000005/trace"},
		{name: "job id range cell 3", wantCell: 3, method: "PUT", path: "/api/v4/jobs/4000001"},
		{name: "job id outside ranges", wantCell: 1, method: "GET", path: "/api/v4/jobs/95000000/artifacts"},
		{name: "routable without cell", wantCell: 1, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"RUNNER-TOKEN: " + noCell}},
		{name: "malformed routable", wantCell: 1, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"RUNNER-TOKEN: glrt-not-a-routable-token"}},
		{name: "tokens name two cells", wantStatus: 400, method: "GET", path: "/api/v4/jobs/7/artifacts?private_token=" + r3, headers: []string{"JOB-TOKEN: " + r2}},
		{name: "token header twice", wantStatus: 400, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"RUNNER-TOKEN: " + r2, "RUNNER-TOKEN: " + r2}},
		{name: "token header underscore", wantStatus: 400, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"Runner_Token: " + r3}},
		{name: "token header both spellings", wantStatus: 400, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"RUNNER-TOKEN: " + r2, "RUNNER_TOKEN: " + r3}},
		{name: "same kind, two values", wantStatus: 400, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"RUNNER-TOKEN: " + r2, "Authorization: Bearer " + other2}},
		{name: "two kinds, one cell", wantCell: 2, method: "GET", path: "/api/v4/jobs/7/artifacts", headers: []string{"PRIVATE-TOKEN: " + pat2, "JOB-TOKEN: " + jwt2}},
		{name: "Edge-Agent-Id spoofed", wantCell: 1, method: "GET", path: "/api/v4/runners/router/discovery", headers: []string{"Edge-Agent-Id: a1", "Edge-Port: 22"}, cellSees: noEdgeHeaders},
		{name: "Edge_Hop underscore", wantCell: 1, method: "GET", path: "/explore", headers: []string{"Edge_Hop: 1", "edge_agent_id: a1"}, cellSees: noEdgeHeaders},
		{name: "EDGE-CELL upper case", wantCell: 1, method: "GET", path: "/api/v4/jobs/7/artifacts", headers: []string{"EDGE-CELL: 3"}, cellSees: noEdgeHeaders},
		{name: "forwarding family spoofed", wantCell: 1, method: "GET", path: "/explore", headers: []string{"X-Forwarded-For: 6.6.6.6", "X-Forwarded-Port: 1", "X-Forwarded-Prefix: /x", "X-Forwarded-Ssl: on", "X-Forwarded-Uri: /admin", "X-Real-IP: 6.6.6.6", "Forwarded: for=6.6.6.6", "X_Forwarded_Host: evil.example", "X-Request-Id: spoofed-id"}, cellSees: edgesOwnForwarding},
		{name: "h2c on a runner path", wantCell: 1, wantStatus: 200, method: "GET", path: "/api/v4/runners/router/discovery", headers: h2c, cellSees: noUpgrade},
		{name: "h2c on legacy", wantCell: 1, wantStatus: 200, method: "GET", path: "/users/sign_in", headers: h2c, cellSees: noUpgrade},
		{name: "websocket on a runner path", wantCell: 1, wantStatus: 200, method: "GET", path: "/api/v4/jobs/7/artifacts", headers: []string{"Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="}, cellSees: noUpgrade},
		{name: "dot segments", wantStatus: 400, method: "POST", path: "/api/v4/jobs/../jobs/request", ctype: "application/json", body: `{}`},
		{name: "encoded dot segments", wantStatus: 400, method: "POST", path: "/api/v4/runners/%2e%2e/jobs/request", ctype: "application/json", body: `{}`},
		{name: "legacy path resolving to runner", wantStatus: 400, method: "POST", path: "/api/v4/x/../jobs/request", ctype: "application/json", body: `{}`},
		{name: "double slash", wantStatus: 400, method: "POST", path: "//api/v4/jobs/request", ctype: "application/json", body: `{}`},
		{name: "double slash inside", wantStatus: 400, method: "GET", path: "/api/v4/jobs//2000005/trace"},
		{name: "encoded slash runner", wantStatus: 400, method: "POST", path: "/api/v4/jobs%2Frequest", ctype: "application/json", body: `{}`},
		{name: "encoded slash job id", wantStatus: 400, method: "GET", path: "/api/v4/jobs/2000005%2Ftrace"},
		{name: "encoded slash legacy API", wantCell: 1, method: "GET", path: "/api/v4/projects/group%2Fproject", cellSees: func(t *testing.T, r cellRequest) {
			if r.rawPath != "/api/v4/projects/group%2Fproject" {
				t.Errorf("cell saw path %q, want it as sent", r.rawPath)
			}
		}},
		{name: "edge path escaping", wantStatus: 400, method: "POST", path: "/-/api/v1/../../api/v4/jobs/request", ctype: "application/json", body: `{}`},
		{name: "legacy", wantCell: 1, method: "GET", path: "/users/sign_in"},
		{name: "agent connect without upgrade", wantStatus: 426, method: "GET", path: "/-/agent/connect"},
		{name: "API connections without JWT", wantStatus: 401, method: "GET", path: "/-/api/v1/agents/a1/connections"},
		{name: "API bad agent id", wantStatus: 400, method: "GET", path: "/-/api/v1/agents/a%20b/connections", headers: []string{api}},
		{name: "API agent id too long", wantStatus: 400, method: "GET", path: "/-/api/v1/agents/" + strings.Repeat("a", 65) + "/proxy/80/", headers: []string{api}},
		{name: "API bad port", wantStatus: 400, method: "GET", path: "/-/api/v1/agents/a1/proxy/99999/x", headers: []string{api}},
		{name: "API bad project id", wantStatus: 400, method: "GET", path: "/-/api/v1/projects/..%2F/agents", headers: []string{api}},
		{name: "API write to a read path", wantStatus: 405, method: "POST", path: "/-/api/v1/projects/p1/agents", headers: []string{api}},
		{name: "API unknown path", wantStatus: 404, method: "GET", path: "/-/api/v1/nothing", headers: []string{api}},
		{name: "API proxy, agent not connected", wantStatus: 504, method: "GET", path: "/-/api/v1/agents/a1/proxy/8080/a%2Fb", headers: []string{api}},
	}
}

// The one router: every row goes to `edge explain` and to a running `edge serve`; the route,
// the cell and any refusal's status agree, and the cells see what the rules promise.
func TestExplainAndServeAgree(t *testing.T) {
	f := newFrontEnv(t, nil)
	rows := frontRows(t, f.apiToken)
	if len(rows) < 40 {
		t.Fatalf("table has %d rows, want at least 40", len(rows))
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			e := f.explain(t, row)
			s := f.serve(t, row)
			if !strings.Contains(e.BodyNote, row.explainBody) {
				t.Errorf("explain says of the body %q, want %q", e.BodyNote, row.explainBody)
			}
			if row.wantStatus != 0 && s.status != row.wantStatus {
				t.Errorf("status %d, want %d (%s)", s.status, row.wantStatus, s.body)
			}
			if row.wantCell != 0 && (len(s.cells) != 1 || s.cells[0] != row.wantCell) {
				t.Errorf("reached cells %v, want cell %d", s.cells, row.wantCell)
			}
			if row.wantCell == 0 && len(s.cells) != 0 {
				t.Errorf("reached cells %v, want none", s.cells)
			}
			if s.route != e.Route {
				t.Errorf("route: serve %q, explain %q", s.route, e.Route)
			}
			switch {
			case e.Status != 0:
				if s.status != e.Status {
					t.Errorf("status: serve %d, explain %d (%s)", s.status, e.Status, s.body)
				}
				if len(s.cells) != 0 {
					t.Errorf("refused request reached cells %v", s.cells)
				}
				checkErrorBody(t, s.header, s.body)
			case e.Route == "runner" || e.Route == "legacy":
				want := uint64(e.Cell)
				if len(s.cells) != 1 || s.cells[0] != want {
					t.Errorf("cells that saw it: %v, explain says cell %d (status %d %s)", s.cells, want, s.status, s.body)
				}
				if s.cell != strconv.FormatUint(want, 10) {
					t.Errorf("access log cell %q, explain %d", s.cell, want)
				}
				if s.status != http.StatusOK {
					t.Errorf("status %d, want the cell's 200", s.status)
				}
				for _, got := range s.seen[want] {
					if id := got.header.Get("X-Request-Id"); id != s.header.Get("X-Request-Id") || len(got.header.Values("X-Request-Id")) != 1 {
						t.Errorf("request id: cell saw %q, client got %q", got.header.Values("X-Request-Id"), s.header.Values("X-Request-Id"))
					}
					if got.host != strings.TrimPrefix(f.edge.PublicURL, "http://") {
						t.Errorf("Host at the cell: %q, want the client's (preserve_host defaults to true)", got.host)
					}
					if row.cellSees != nil {
						row.cellSees(t, got)
					}
				}
			default:
				if len(s.cells) != 0 {
					t.Errorf("%s request reached cells %v", e.Route, s.cells)
				}
			}
		})
	}
}

// checkErrorBody holds every refusal to the one error shape.
func checkErrorBody(t *testing.T, h http.Header, body string) {
	t.Helper()
	var e struct {
		Error   *string `json:"error"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == nil || e.Message == nil || *e.Error == "" {
		t.Errorf("error body %q: want {\"error\": cause, \"message\": ...}", body)
	}
	for k, want := range map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
		if got := h.Get(k); got != want {
			t.Errorf("error answer %s: got %q, want %q", k, got, want)
		}
	}
}

func noEdgeHeaders(t *testing.T, r cellRequest) {
	for k := range r.header {
		if l := strings.ToLower(strings.ReplaceAll(k, "_", "-")); strings.HasPrefix(l, "edge-") {
			t.Errorf("header %s reached the cell", k)
		}
	}
}

func noUpgrade(t *testing.T, r cellRequest) {
	for _, k := range []string{"Upgrade", "Http2-Settings"} {
		if v := r.header.Values(k); len(v) > 0 {
			t.Errorf("%s reached the cell: %q", k, v)
		}
	}
}

// edgesOwnForwarding: from an untrusted client, edge's own view replaces the whole family.
func edgesOwnForwarding(t *testing.T, r cellRequest) {
	want := map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Real-Ip": "127.0.0.1", "X-Forwarded-Proto": "http"}
	for k, v := range want {
		if got := r.header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s at the cell: %q, want %q", k, got, v)
		}
	}
	for k := range r.header {
		l := strings.ToLower(strings.ReplaceAll(k, "_", "-"))
		switch {
		case l == "forwarded", l == "x-forwarded-port", l == "x-forwarded-prefix", l == "x-forwarded-ssl", l == "x-forwarded-uri":
			t.Errorf("%s from the client reached the cell: %q", k, r.header.Values(k))
		case k == "X_forwarded_host":
			t.Errorf("%s from the client reached the cell", k)
		}
	}
	if r.header.Get("X-Request-Id") == "spoofed-id" {
		t.Errorf("an untrusted client's X-Request-Id reached the cell")
	}
}
