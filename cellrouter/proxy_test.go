package cellrouter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/tokens"
	"gitlab.com/edge/edge/wire"
)

// seen is what a test cell recorded of one request.
type seen struct {
	method, path     string
	header           http.Header
	bodySum          [32]byte
	bodyLen          int
	contentLength    int64
	transferEncoding []string
	host             string
}

type testCell struct {
	id     uint64
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []seen
	answer http.HandlerFunc // optional: answers after recording
}

func (c *testCell) requests() []seen {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]seen(nil), c.seen...)
}

func newTestCell(t *testing.T, id uint64) *testCell {
	c := &testCell{id: id}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		c.mu.Lock()
		c.seen = append(c.seen, seen{r.Method, r.URL.Path, r.Header.Clone(), sha256.Sum256(body), len(body), r.ContentLength, r.TransferEncoding, r.Host})
		answer := c.answer
		c.mu.Unlock()
		if answer != nil {
			answer(w, r)
			return
		}
		w.Header().Set("X-Cell", fmt.Sprint(id))
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

type fixture struct {
	cells []*testCell
	proxy *Router
	front *httptest.Server
}

func newFixture(t *testing.T, configure func(*Options)) *fixture {
	return newFixtureRoutes(t, configure, nil)
}

// newFixtureRoutes serves three cells through a Front; routes configures its table.
func newFixtureRoutes(t *testing.T, configure func(*Options), routes func(*front.Routes)) *fixture {
	t.Helper()
	f := &fixture{}
	var dcells []discovery.Cell
	for i := uint64(1); i <= 3; i++ {
		c := newTestCell(t, i)
		f.cells = append(f.cells, c)
		u, _ := url.Parse(c.srv.URL)
		dc := discovery.Cell{ID: i, URL: u, Legacy: i == 1}
		if i == 2 {
			dc.Ranges = []discovery.IDRange{{Lo: 2000000, Hi: 3999999}}
		}
		dcells = append(dcells, dc)
	}
	cells, err := discovery.NewCells(dcells)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Cells: cells, Learned: discovery.NewLearnedJobs(100, time.Hour)}
	if configure != nil {
		configure(&opts)
	}
	if f.proxy, err = New(opts); err != nil {
		t.Fatal(err)
	}
	f.front = httptest.NewServer(frontFor(t, f.proxy, front.Options{Tracer: opts.Tracer}, routes))
	t.Cleanup(f.front.Close)
	return f
}

// only asserts that exactly one request reached the cells, at cell want, and returns it.
func (f *fixture) only(t *testing.T, want uint64) seen {
	t.Helper()
	var got []seen
	for _, c := range f.cells {
		for _, s := range c.requests() {
			if c.id != want {
				t.Errorf("request %s %s reached cell %d, want cell %d", s.method, s.path, c.id, want)
			}
			got = append(got, s)
		}
	}
	if len(got) != 1 {
		t.Fatalf("cells got %d requests, want 1", len(got))
	}
	return got[0]
}

func (f *fixture) none(t *testing.T) {
	t.Helper()
	for _, c := range f.cells {
		if n := len(c.requests()); n != 0 {
			t.Errorf("cell %d got %d requests, want none", c.id, n)
		}
	}
}

func routable(t testing.TB, cell uint64) string {
	keys := tokens.Keys{}.Set(tokens.KeyOrganization, 1)
	if cell != 0 {
		keys = keys.Set(tokens.KeyCell, cell)
	}
	tok, err := tokens.MintRoutable("glrt-t2_", [16]byte{1, 2, 3}, keys)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func newReq(t *testing.T, method, url string, body io.Reader, headers ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

func TestRoutesByTokenWherever(t *testing.T) {
	tok2, tok3 := routable(t, 2), routable(t, 3)
	jsonBody := `{"token":"` + tok3 + `","last_update":"abc","info":{"name":"r1"}}`
	tests := []struct {
		name     string
		req      func(base string) *http.Request
		wantCell uint64
	}{
		{"RUNNER-TOKEN header", func(b string) *http.Request {
			return newReq(t, "POST", b+"/api/v4/runners/verify", strings.NewReader(`{}`), "RUNNER-TOKEN", tok2, "Content-Type", "application/json")
		}, 2},
		{"PRIVATE-TOKEN header", func(b string) *http.Request {
			return newReq(t, "POST", b+"/api/v4/runners/5/reset_authentication_token", nil, "PRIVATE-TOKEN", tok3)
		}, 3},
		{"Authorization Bearer", func(b string) *http.Request {
			return newReq(t, "GET", b+"/api/v4/runners/router/discovery", nil, "Authorization", "Bearer "+tok2)
		}, 2},
		{"query token", func(b string) *http.Request {
			return newReq(t, "GET", b+"/api/v4/jobs/77/artifacts?token="+url.QueryEscape(tok3), nil)
		}, 3},
		{"JSON body only (runner before 16.10)", func(b string) *http.Request {
			return newReq(t, "POST", b+"/api/v4/jobs/request", strings.NewReader(jsonBody), "Content-Type", "application/json")
		}, 3},
		{"form body only", func(b string) *http.Request {
			return newReq(t, "POST", b+"/api/v4/runners/verify", strings.NewReader("token="+url.QueryEscape(tok2)), "Content-Type", "application/x-www-form-urlencoded")
		}, 2},
		{"header and body agree", func(b string) *http.Request {
			return newReq(t, "POST", b+"/api/v4/jobs/request", strings.NewReader(jsonBody), "RUNNER-TOKEN", tok3, "Content-Type", "application/json")
		}, 3},
		{"job id in range", func(b string) *http.Request {
			return newReq(t, "PATCH", b+"/api/v4/jobs/2500000/trace", strings.NewReader("log"), "JOB-TOKEN", "opaque-legacy-job-token")
		}, 2},
		{"malformed routable token goes to legacy", func(b string) *http.Request {
			bad := tok2[:len(tok2)-1] + "0"
			return newReq(t, "GET", b+"/api/v4/runners/router/discovery", nil, "RUNNER-TOKEN", bad)
		}, 1},
		{"no token goes to legacy", func(b string) *http.Request {
			return newReq(t, "GET", b+"/api/v4/jobs/12/artifacts", nil)
		}, 1},
		{"not runner traffic goes to legacy", func(b string) *http.Request {
			return newReq(t, "GET", b+"/users/sign_in", nil, "PRIVATE-TOKEN", tok3)
		}, 1},
		{"trace body is never read", func(b string) *http.Request {
			return newReq(t, "PATCH", b+"/api/v4/jobs/12/trace", strings.NewReader(`{"token":"`+tok3+`"}`), "Content-Type", "application/json")
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			req := tt.req(f.front.URL)
			var sent []byte
			if req.Body != nil {
				sent, _ = io.ReadAll(req.Body)
				req.Body = io.NopCloser(bytes.NewReader(sent))
				req.ContentLength = int64(len(sent))
			}
			resp, _ := do(t, req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			got := f.only(t, tt.wantCell)
			if got.bodySum != sha256.Sum256(sent) || got.bodyLen != len(sent) {
				t.Errorf("body changed on the way: got %d bytes, sent %d", got.bodyLen, len(sent))
			}
			if len(sent) > 0 && got.contentLength != int64(len(sent)) {
				t.Errorf("Content-Length: got %d, want %d", got.contentLength, len(sent))
			}
		})
	}
}

func TestChunkedBodyStaysChunked(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"token":"` + routable(t, 3) + `"}`
	req := newReq(t, "POST", f.front.URL+"/api/v4/jobs/request", io.MultiReader(strings.NewReader(body)), "Content-Type", "application/json")
	req.ContentLength = -1
	resp, _ := do(t, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := f.only(t, 3)
	if got.contentLength != -1 || len(got.transferEncoding) != 1 || got.transferEncoding[0] != "chunked" {
		t.Errorf("cell saw Content-Length %d, Transfer-Encoding %v; want chunked", got.contentLength, got.transferEncoding)
	}
	if got.bodySum != sha256.Sum256([]byte(body)) {
		t.Errorf("body changed on the way")
	}
}

func TestConflictingTokensAre400(t *testing.T) {
	tests := []struct {
		name string
		req  func(base string) *http.Request
	}{
		{"two headers", func(b string) *http.Request {
			pat, err := tokens.MintRoutable("glpat-", [16]byte{4}, tokens.Keys{}.Set(tokens.KeyCell, 3).Set(tokens.KeyUser, 1))
			if err != nil {
				t.Fatal(err)
			}
			return newReq(t, "GET", b+"/api/v4/jobs/5/artifacts", nil, "JOB-TOKEN", routable(t, 2), "PRIVATE-TOKEN", pat)
		}},
		{"header and body", func(b string) *http.Request {
			return newReq(t, "POST", b+"/api/v4/jobs/request", strings.NewReader(`{"token":"`+routable(t, 3)+`"}`),
				"RUNNER-TOKEN", routable(t, 2), "Content-Type", "application/json")
		}},
		{"header and query", func(b string) *http.Request {
			return newReq(t, "GET", b+"/api/v4/jobs/5/artifacts?job_token="+url.QueryEscape(routable(t, 3)), nil, "JOB-TOKEN", routable(t, 2))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			resp, body := do(t, tt.req(f.front.URL))
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			var e struct{ Error, Message string }
			if err := json.Unmarshal(body, &e); err != nil || e.Error != "conflicting_tokens" || !strings.Contains(e.Message, "cell 2") {
				t.Errorf("body %q: want a JSON error naming the cells", body)
			}
			if strings.Contains(string(body), "glrt-") {
				t.Errorf("error body echoes a token: %q", body)
			}
			f.none(t)
		})
	}
}

func TestBodyLimit(t *testing.T) {
	const limit = 1024
	big := `{"info":"` + strings.Repeat("x", 4*limit) + `","token":"` + routable(t, 3) + `"}`
	t.Run("without a header token the body is refused", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.BodyTokenLimit = limit })
		resp, _ := do(t, newReq(t, "POST", f.front.URL+"/api/v4/jobs/request", strings.NewReader(big), "Content-Type", "application/json"))
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
		f.none(t)
	})
	t.Run("chunked, without a header token, is refused", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.BodyTokenLimit = limit })
		req := newReq(t, "POST", f.front.URL+"/api/v4/jobs/request", io.MultiReader(strings.NewReader(big)), "Content-Type", "application/json")
		req.ContentLength = -1
		resp, _ := do(t, req)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
		f.none(t)
	})
	t.Run("with a header token the body is streamed whole", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.BodyTokenLimit = limit })
		req := newReq(t, "POST", f.front.URL+"/api/v4/jobs/request", io.MultiReader(strings.NewReader(big)), "Content-Type", "application/json", "RUNNER-TOKEN", routable(t, 3))
		req.ContentLength = -1
		resp, _ := do(t, req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		if got := f.only(t, 3); got.bodySum != sha256.Sum256([]byte(big)) {
			t.Errorf("streamed body changed: %d bytes, sent %d", got.bodyLen, len(big))
		}
	})
}

func TestEdgeHeadersAndForwarding(t *testing.T) {
	t.Run("untrusted client", func(t *testing.T) {
		f := newFixture(t, nil)
		resp, _ := do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil,
			"Edge-Agent-Id", "7", "Edge-Hop", "0", "X-Forwarded-For", "6.6.6.6", "X-Forwarded-Proto", "https",
			"X-Real-Ip", "6.6.6.6", "Forwarded", "for=6.6.6.6"))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		h := f.only(t, 1).header
		for k := range h {
			if strings.HasPrefix(k, "Edge-") {
				t.Errorf("header %s reached the cell", k)
			}
		}
		checks := map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http", "X-Real-Ip": "127.0.0.1", "Forwarded": ""}
		for k, want := range checks {
			if got := h.Get(k); got != want {
				t.Errorf("%s: got %q, want %q", k, got, want)
			}
		}
		if got, want := h.Get("X-Forwarded-Host"), strings.TrimPrefix(f.front.URL, "http://"); got != want {
			t.Errorf("X-Forwarded-Host: got %q, want %q", got, want)
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		f := newFixtureRoutes(t, nil, func(r *front.Routes) { r.Headers.Trusted = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
		do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil,
			"X-Forwarded-For", "203.0.113.9", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "gitlab.example.com"))
		h := f.only(t, 1).header
		checks := map[string]string{"X-Forwarded-For": "203.0.113.9, 127.0.0.1", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "gitlab.example.com"}
		for k, want := range checks {
			if got := h.Get(k); got != want {
				t.Errorf("%s: got %q, want %q", k, got, want)
			}
		}
	})
}

func TestUpstreamFailures(t *testing.T) {
	t.Run("cell down is 502", func(t *testing.T) {
		f := newFixture(t, nil)
		f.cells[1].srv.Close()
		resp, body := do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil, "RUNNER-TOKEN", routable(t, 2)))
		if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("got %d %q, want 502 JSON", resp.StatusCode, body)
		}
	})
	t.Run("cell too slow is 504", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.UpstreamTimeout = 200 * time.Millisecond })
		release := make(chan struct{})
		defer close(release)
		f.cells[1].answer = func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		resp, body := do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil, "RUNNER-TOKEN", routable(t, 2)))
		if resp.StatusCode != http.StatusGatewayTimeout || !json.Valid(body) {
			t.Errorf("got %d %q, want 504 JSON", resp.StatusCode, body)
		}
	})
	t.Run("client that goes away cancels the upstream request", func(t *testing.T) {
		f := newFixture(t, nil)
		arrived, canceled := make(chan struct{}, 1), make(chan struct{})
		f.cells[1].answer = func(w http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			<-r.Context().Done()
			close(canceled)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req := newReq(t, "POST", f.front.URL+"/api/v4/jobs/request", strings.NewReader(`{}`), "RUNNER-TOKEN", routable(t, 2)).WithContext(ctx)
		go func() {
			// The client goes away once the cell has the request, not before.
			select {
			case <-arrived:
			case <-ctx.Done():
			}
			cancel()
		}()
		if _, err := http.DefaultClient.Do(req); err == nil {
			t.Fatal("request should have been canceled")
		}
		select {
		case <-canceled:
		case <-time.After(5 * time.Second):
			t.Fatal("the cell's request was not canceled")
		}
	})
}

func TestLearnsJobIDsFromJobAnswers(t *testing.T) {
	f := newFixture(t, nil)
	f.cells[2].answer = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.JobsRequestPath {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":987654321,"token":"job-token","variables":[`+strings.Repeat(`{"key":"K","value":"v"},`, 500)+`{}]}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}
	resp, body := do(t, newReq(t, "POST", f.front.URL+wire.JobsRequestPath, strings.NewReader(`{}`), "RUNNER-TOKEN", routable(t, 3), "Content-Type", "application/json"))
	if resp.StatusCode != http.StatusCreated || !json.Valid(body) {
		t.Fatalf("job answer: %d, valid JSON %v", resp.StatusCode, json.Valid(body))
	}
	resp, _ = do(t, newReq(t, "PATCH", f.front.URL+"/api/v4/jobs/987654321/trace", strings.NewReader("x"), "JOB-TOKEN", "opaque"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("trace: status %d, want 202 from cell 3", resp.StatusCode)
	}
	if n := len(f.cells[2].requests()); n != 2 {
		t.Errorf("cell 3 got %d requests, want 2", n)
	}
}

type fakeClassifier struct {
	mu    sync.Mutex
	asked []string
	reply map[string]string
}

func (c *fakeClassifier) Classify(_ context.Context, typ discovery.ClassifyType, value uint64) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := fmt.Sprintf("%s=%d", typ, value)
	c.asked = append(c.asked, key)
	addr, ok := c.reply[key]
	return addr, ok, nil
}

func TestClassifyByMostSpecificKey(t *testing.T) {
	classifier := &fakeClassifier{}
	f := newFixture(t, func(o *Options) { o.Classifier = classifier })
	classifier.reply = map[string]string{"PROJECT_ID=77": f.cells[2].srv.URL + "/"}
	keys := tokens.Keys{}.Set(tokens.KeyOrganization, 1).Set(tokens.KeyGroup, 5).Set(tokens.KeyProject, 77)
	tok, _ := tokens.MintRoutable("glrt-", [16]byte{}, keys)
	do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil, "RUNNER-TOKEN", tok))
	f.only(t, 3)
	if len(classifier.asked) != 1 || classifier.asked[0] != "PROJECT_ID=77" {
		t.Errorf("classify asked %v, want [PROJECT_ID=77]", classifier.asked)
	}
}

func TestClassifyAnswerNotACellFallsBack(t *testing.T) {
	classifier := &fakeClassifier{reply: map[string]string{"ORGANIZATION_ID=1": "http://198.51.100.1:3000"}}
	f := newFixture(t, func(o *Options) { o.Classifier = classifier })
	do(t, newReq(t, "GET", f.front.URL+"/api/v4/runners/router/discovery", nil, "RUNNER-TOKEN", routable(t, 0)))
	f.only(t, 1)
}

// preserve_host: a cell sees the client's Host, or with it off its own address.
func TestPreserveHost(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprint(keep), func(t *testing.T) {
			c := newTestCell(t, 1)
			u, _ := url.Parse(c.srv.URL)
			srv := httptest.NewServer(cellsFront(t, []discovery.Cell{{ID: 1, URL: u, Legacy: true, PreserveHost: keep}}, nil))
			defer srv.Close()
			req := newReq(t, "GET", srv.URL+"/users/sign_in", nil)
			req.Host = "gitlab.example.com"
			do(t, req)
			got := c.requests()
			want := u.Host
			if keep {
				want = "gitlab.example.com"
			}
			if len(got) != 1 || got[0].host != want {
				t.Errorf("Host at the cell: %v, want %q", got, want)
			}
		})
	}
}

// A small body of known length is read whole and handed to the cell transport as a body in memory
// (which the inline transport sends with its request); one awaited with Expect: 100-continue, or
// larger than the limit, streams. Either way the cell gets it byte for byte with the client's
// framing.
func TestSmallBodiesHeldLargeStreamed(t *testing.T) {
	held := &memoryBodies{base: http.DefaultTransport}
	f := newFixture(t, func(o *Options) { o.BodyTokenLimit = 1024; o.Transport = held })
	for _, tt := range []struct {
		name       string
		size       int
		expect     bool
		wantInline bool
	}{
		{"512 bytes", 512, false, true},
		{"at the limit", 1024, false, true},
		{"over the limit", 1025, false, false},
		{"Expect: 100-continue", 512, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := bytes.Repeat([]byte("x"), tt.size)
			req := newReq(t, "POST", f.front.URL+"/api/v4/projects/1/issues", bytes.NewReader(body), "Content-Type", "application/octet-stream")
			if tt.expect {
				req.Header.Set("Expect", "100-continue")
			}
			resp, _ := do(t, req)
			reqs := f.cells[0].requests()
			got := reqs[len(reqs)-1]
			if resp.StatusCode != http.StatusOK || got.bodySum != sha256.Sum256(body) || got.contentLength != int64(tt.size) {
				t.Errorf("status %d, cell saw %d bytes (Content-Length %d)", resp.StatusCode, got.bodyLen, got.contentLength)
			}
			if inMemory := held.last.Load(); inMemory != tt.wantInline {
				t.Errorf("body handed to the transport in memory: %v, want %v", inMemory, tt.wantInline)
			}
		})
	}
}

// memoryBodies records whether the last request's body reached the transport whole in memory
// (a wire.MemoryBody), then carries it with base.
type memoryBodies struct {
	base http.RoundTripper
	last atomic.Bool
}

func (m *memoryBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	b, ok := req.Body.(wire.MemoryBody)
	m.last.Store(ok && b.Whole() != nil)
	return m.base.RoundTrip(req)
}
