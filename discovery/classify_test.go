package discovery

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// upstream is a classify service on 127.0.0.1 that checks every request's shape and counts them.
type upstream struct {
	t    *testing.T
	srv  *httptest.Server
	hits atomic.Int64
	// answer writes the reply; it runs after the shape checks.
	answer func(w http.ResponseWriter, r *http.Request)
}

func newUpstream(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *upstream {
	u := &upstream{t: t, answer: answer}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/classify") {
			t.Errorf("request: got %s %s, want POST .../v1/classify", r.Method, r.URL.Path)
		}
		if got, want := r.Header.Get("Content-Type"), "application/json"; got != want {
			t.Errorf("Content-Type: got %q, want %q", got, want)
		}
		if got, want := r.Header.Get("Accept"), "application/json"; got != want {
			t.Errorf("Accept: got %q, want %q", got, want)
		}
		u.answer(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func reply(status int, cacheControl, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const proxyCell2 = `{"action":"proxy","proxy":{"address":"http://cell-2.example.com"}}`

func newTestClassifier(t *testing.T, u *upstream, clock *fakeClock) *Classifier {
	t.Helper()
	o := ClassifierOptions{URL: u.srv.URL, Timeout: 5 * time.Second}
	if clock != nil {
		o.Now = clock.Now
	}
	c, err := NewClassifier(o)
	if err != nil {
		t.Fatalf("NewClassifier: %v", err)
	}
	return c
}

func TestClassifyRequestBody(t *testing.T) {
	tests := []struct {
		typ   ClassifyType
		value uint64
		want  string
	}{
		{ClassifyProject, 1234, `{"type":"PROJECT_ID","value":"1234"}`},
		{ClassifyGroup, 0, `{"type":"GROUP_ID","value":"0"}`},
		{ClassifyOrganization, 1, `{"type":"ORGANIZATION_ID","value":"1"}`},
		{ClassifyUser, ^uint64(0), `{"type":"USER_ID","value":"18446744073709551615"}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			var got string
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = string(b)
				reply(http.StatusOK, "", proxyCell2)(w, r)
			})
			c := newTestClassifier(t, u, nil)
			if _, _, err := c.Classify(t.Context(), tt.typ, tt.value); err != nil {
				t.Fatalf("Classify: %v", err)
			}
			if got != tt.want {
				t.Errorf("request body: got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestClassifyEndpointPath(t *testing.T) {
	tests := []struct{ suffix, wantPath string }{
		{"", "/v1/classify"},
		{"/", "/v1/classify"},
		{"/topology", "/topology/v1/classify"},
		{"/topology/", "/topology/v1/classify"},
	}
	for _, tt := range tests {
		t.Run(tt.suffix, func(t *testing.T) {
			var got string
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				got = r.URL.Path
				reply(http.StatusOK, "", proxyCell2)(w, r)
			})
			c, err := NewClassifier(ClassifierOptions{URL: u.srv.URL + tt.suffix})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Classify(t.Context(), ClassifyProject, 1); err != nil {
				t.Fatalf("Classify: %v", err)
			}
			if got != tt.wantPath {
				t.Errorf("path: got %q, want %q", got, tt.wantPath)
			}
		})
	}
}

func TestClassifyAnswers(t *testing.T) {
	huge := `{"action":"proxy","proxy":{"address":"http://cell-2.example.com"},"pad":"` +
		strings.Repeat("x", 70_000) + `"}`
	tests := []struct {
		name      string
		status    int
		body      string
		wantAddr  string
		wantFound bool
		wantErr   bool
	}{
		{"proxy", 200, proxyCell2, "http://cell-2.example.com", true, false},
		{"proxy as grpc-gateway writes it", 200, `{"action":"PROXY","proxy":{"address":"cell-2.example.com"}}`, "cell-2.example.com", true, false},
		{"unknown fields ignored", 200, `{"action":"proxy","proxy":{"address":"http://c","x":1},"y":[1]}`, "http://c", true, false},
		{"reject", 200, `{"action":"reject","reject":{"message":"no","code":404}}`, "", false, false},
		{"unspecified action", 200, `{"action":"ACTION_UNSPECIFIED"}`, "", false, false},
		{"no action", 200, `{}`, "", false, false},
		{"404", 404, `{"code":5,"message":"not found"}`, "", false, false},
		{"404 without body", 404, ``, "", false, false},
		{"500", 500, `{"action":"proxy","proxy":{"address":"http://c"}}`, "", false, true},
		{"503", 503, ``, "", false, true},
		{"403", 403, ``, "", false, true},
		{"bad JSON", 200, `{"action":"proxy",`, "", false, true},
		{"not JSON", 200, `<html>`, "", false, true},
		{"empty body", 200, ``, "", false, true},
		{"proxy without address", 200, `{"action":"proxy","proxy":{}}`, "", false, true},
		{"proxy without proxy", 200, `{"action":"proxy"}`, "", false, true},
		{"answer over 64 KiB", 200, huge, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, reply(tt.status, "", tt.body))
			c := newTestClassifier(t, u, nil)
			addr, found, err := c.Classify(t.Context(), ClassifyProject, 1234)
			if tt.wantErr {
				if !errors.Is(err, ErrClassify) {
					t.Errorf("Classify error: got %v, want one wrapping ErrClassify", err)
				}
			} else if err != nil {
				t.Errorf("Classify error: got %v, want none", err)
			}
			if addr != tt.wantAddr || found != tt.wantFound {
				t.Errorf("Classify: got %q %v, want %q %v", addr, found, tt.wantAddr, tt.wantFound)
			}
		})
	}
}

func TestClassifyTransportError(t *testing.T) {
	u := newUpstream(t, reply(200, "", proxyCell2))
	c := newTestClassifier(t, u, nil)
	u.srv.Close()
	if _, _, err := c.Classify(t.Context(), ClassifyProject, 1); !errors.Is(err, ErrClassify) {
		t.Errorf("Classify against a closed server: got %v, want an error wrapping ErrClassify", err)
	}
}

func TestClassifyTimeout(t *testing.T) {
	stop := make(chan struct{})
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a client hanging up only once the body is read
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	t.Cleanup(func() { close(stop) }) // runs before the server's Close, which waits for handlers
	c, err := NewClassifier(ClassifierOptions{URL: u.srv.URL, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, found, err := c.Classify(t.Context(), ClassifyGroup, 9)
	if !errors.Is(err, ErrClassify) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Classify error: got %v, want one wrapping ErrClassify and context.DeadlineExceeded", err)
	}
	if found {
		t.Errorf("Classify found: got true, want false")
	}
}

func TestClassifyUnknownType(t *testing.T) {
	u := newUpstream(t, reply(200, "", proxyCell2))
	c := newTestClassifier(t, u, nil)
	if _, _, err := c.Classify(t.Context(), "NAMESPACE_ID", 1); !errors.Is(err, ErrClassify) {
		t.Errorf("Classify error: got %v, want one wrapping ErrClassify", err)
	}
	if got := u.hits.Load(); got != 0 {
		t.Errorf("upstream hits: got %d, want 0", got)
	}
}

func TestClassifyCaching(t *testing.T) {
	tests := []struct {
		name         string
		status       int
		cacheControl string
		body         string
		cachedFor    time.Duration // 0 = not cached
		wantErr      bool
	}{
		{"positive max-age", 200, "max-age=60", proxyCell2, 60 * time.Second, false},
		{"positive max-age among other directives", 200, "public, Max-Age=\"60\", must-revalidate", proxyCell2, 60 * time.Second, false},
		{"reject max-age", 200, "max-age=30", `{"action":"reject"}`, 30 * time.Second, false},
		{"404 max-age", 404, "max-age=30", ``, 30 * time.Second, false},
		{"no Cache-Control", 200, "", proxyCell2, 0, false},
		{"no max-age", 200, "public", proxyCell2, 0, false},
		{"max-age=0", 200, "max-age=0", proxyCell2, 0, false},
		{"bad max-age", 200, "max-age=soon", proxyCell2, 0, false},
		{"no-store", 200, "no-store, max-age=60", proxyCell2, 0, false},
		{"no-cache", 200, "max-age=60, no-cache", proxyCell2, 0, false},
		{"404 without max-age", 404, "", ``, 0, false},
		{"error with max-age", 500, "max-age=60", ``, 0, true},
		{"malformed with max-age", 200, "max-age=60", `{`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, reply(tt.status, tt.cacheControl, tt.body))
			clock := newFakeClock()
			c := newTestClassifier(t, u, clock)
			var first answer
			call := func(wantHits int64) {
				t.Helper()
				addr, found, err := c.Classify(t.Context(), ClassifyProject, 1234)
				if (err != nil) != tt.wantErr {
					t.Fatalf("Classify error: got %v, want error %v", err, tt.wantErr)
				}
				if got := u.hits.Load(); got != wantHits {
					t.Fatalf("upstream hits: got %d, want %d", got, wantHits)
				}
				if wantHits == 1 && first == (answer{}) {
					first = answer{addr, found}
				}
				if got := (answer{addr, found}); got != first {
					t.Errorf("Classify: got %+v, want the first answer %+v", got, first)
				}
			}
			call(1)
			if tt.cachedFor == 0 {
				call(2)
				return
			}
			call(1)
			clock.Advance(tt.cachedFor - time.Second)
			call(1)
			clock.Advance(time.Second)
			call(2)
			call(2)
		})
	}
}

func TestClassifyCacheReturnsSameAnswer(t *testing.T) {
	u := newUpstream(t, reply(200, "max-age=60", proxyCell2))
	c := newTestClassifier(t, u, newFakeClock())
	for i := range 3 {
		addr, found, err := c.Classify(t.Context(), ClassifyProject, 1234)
		if err != nil || !found || addr != "http://cell-2.example.com" {
			t.Errorf("Classify #%d: got %q %v %v, want http://cell-2.example.com true nil", i, addr, found, err)
		}
	}
}

func TestClassifyCacheKeyedByTypeAndValue(t *testing.T) {
	u := newUpstream(t, reply(200, "max-age=60", proxyCell2))
	c := newTestClassifier(t, u, newFakeClock())
	calls := []struct {
		typ      ClassifyType
		value    uint64
		wantHits int64
	}{
		{ClassifyProject, 1, 1},
		{ClassifyProject, 2, 2},
		{ClassifyGroup, 1, 3},
		{ClassifyUser, 1, 4},
		{ClassifyOrganization, 1, 5},
		{ClassifyProject, 1, 5},
		{ClassifyGroup, 1, 5},
	}
	for _, call := range calls {
		if _, _, err := c.Classify(t.Context(), call.typ, call.value); err != nil {
			t.Fatalf("Classify(%s, %d): %v", call.typ, call.value, err)
		}
		if got := u.hits.Load(); got != call.wantHits {
			t.Errorf("after Classify(%s, %d): upstream hits %d, want %d", call.typ, call.value, got, call.wantHits)
		}
	}
}

func TestClassifyCoalescesConcurrentLookups(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-release
		reply(200, "max-age=60", proxyCell2)(w, r)
	})
	c := newTestClassifier(t, u, newFakeClock())

	const callers = 100
	start := make(chan struct{})
	type result struct {
		addr  string
		found bool
		err   error
	}
	results := make(chan result, callers)
	for range callers {
		go func() {
			<-start
			addr, found, err := c.Classify(context.Background(), ClassifyProject, 77)
			results <- result{addr, found, err}
		}()
	}
	close(start)
	<-arrived
	close(release)
	for range callers {
		r := <-results
		if r.err != nil || !r.found || r.addr != "http://cell-2.example.com" {
			t.Errorf("Classify: got %q %v %v, want http://cell-2.example.com true nil", r.addr, r.found, r.err)
		}
	}
	if got := u.hits.Load(); got != 1 {
		t.Errorf("upstream hits for %d concurrent lookups: got %d, want 1", callers, got)
	}
}

func TestClassifyCallerCancelDoesNotFailTheFlight(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		reply(200, "max-age=60", proxyCell2)(w, r)
	})
	c := newTestClassifier(t, u, newFakeClock())

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.Classify(ctx, ClassifyProject, 5)
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; !errors.Is(err, ErrClassify) || !errors.Is(err, context.Canceled) {
		t.Errorf("Classify with a cancelled context: got %v, want one wrapping ErrClassify and context.Canceled", err)
	}
	close(release)
	addr, found, err := c.Classify(t.Context(), ClassifyProject, 5)
	if err != nil || !found || addr != "http://cell-2.example.com" {
		t.Errorf("Classify after the flight: got %q %v %v, want http://cell-2.example.com true nil", addr, found, err)
	}
	if got := u.hits.Load(); got != 1 {
		t.Errorf("upstream hits: got %d, want 1", got)
	}
}

func TestClassifyLogsFailuresWithoutSecrets(t *testing.T) {
	u := newUpstream(t, reply(500, "", ``))
	var buf bytes.Buffer
	c, err := NewClassifier(ClassifierOptions{URL: u.srv.URL, Log: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Classify(t.Context(), ClassifyProject, 1234); err == nil {
		t.Fatalf("Classify: got no error, want one")
	}
	for _, want := range []string{"classify failed", "PROJECT_ID", "1234", "status 500"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log: got %q, want it to contain %q", buf.String(), want)
		}
	}
}

func TestNewClassifierValidation(t *testing.T) {
	tests := []struct {
		name    string
		o       ClassifierOptions
		wantErr bool
	}{
		{"valid", ClassifierOptions{URL: "http://127.0.0.1:1"}, false},
		{"valid with everything", ClassifierOptions{URL: "https://ts.example.com/base/", Client: http.DefaultClient,
			Timeout: time.Second, CacheSize: 5, Log: slog.New(slog.DiscardHandler), Now: time.Now}, false},
		{"no URL", ClassifierOptions{}, true},
		{"not http", ClassifierOptions{URL: "grpc://ts.example.com"}, true},
		{"no host", ClassifierOptions{URL: "http://"}, true},
		{"unparsable", ClassifierOptions{URL: "http://a b/%"}, true},
		{"negative timeout", ClassifierOptions{URL: "http://a", Timeout: -1}, true},
		{"negative cache size", ClassifierOptions{URL: "http://a", CacheSize: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClassifier(tt.o)
			if tt.wantErr {
				if !errors.Is(err, ErrBadClassifierOptions) {
					t.Errorf("NewClassifier error: got %v, want one wrapping ErrBadClassifierOptions", err)
				}
				return
			}
			if err != nil || c == nil {
				t.Errorf("NewClassifier: got %v %v, want a classifier", c, err)
			}
		})
	}
}

func TestClassifyCachedDoesNotAllocate(t *testing.T) {
	u := newUpstream(t, reply(200, "max-age=60", proxyCell2))
	c := newTestClassifier(t, u, nil)
	ctx := t.Context()
	if _, _, err := c.Classify(ctx, ClassifyProject, 1234); err != nil {
		t.Fatal(err)
	}
	if got := testing.AllocsPerRun(100, func() { c.Classify(ctx, ClassifyProject, 1234) }); got != 0 {
		t.Errorf("cached Classify allocations: got %v, want 0", got)
	}
}

func BenchmarkClassifyCached(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(reply(200, "max-age=3600", proxyCell2)))
	defer srv.Close()
	c, err := NewClassifier(ClassifierOptions{URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := c.Classify(ctx, ClassifyProject, 1234); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, found, err := c.Classify(ctx, ClassifyProject, 1234); !found || err != nil {
				b.Fatalf("Classify: %v %v", found, err)
			}
		}
	})
}
