package cellrouter

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/front"
)

// answerTransport answers every upstream request at once, so the benchmarks measure edge's
// own work per request: classification, rewriting and copying, not the network.
type answerTransport struct{}

func (answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, Request: r, ContentLength: 11,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(`{"ok":true}`)),
	}, nil
}

func benchProxy(b *testing.B, configure func(*Options)) *Router {
	var cells []discovery.Cell
	for i := uint64(1); i <= 3; i++ {
		u, _ := url.Parse("http://127.0.0.1:" + string(rune('0'+i)) + "000")
		cells = append(cells, discovery.Cell{ID: i, URL: u, Legacy: i == 1})
	}
	dc, err := discovery.NewCells(cells)
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Cells: dc, Transport: answerTransport{}, Learned: discovery.NewLearnedJobs(1000, time.Hour)}
	if configure != nil {
		configure(&o)
	}
	p, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkServeHTTP(b *testing.B) {
	priv, verifier := newES256(b)
	jwt := jobToken(b, priv, "ES256", 2, time.Now().Add(time.Hour), "gitlab-authz-token")
	tok := routable(b, 2)
	body := `{"token":"` + tok + `","last_update":"f2c1d8a","info":{"name":"runner","version":"17.11.0","platform":"linux","architecture":"amd64","features":{"variables":true,"artifacts":true}}}`
	cases := []struct {
		name   string
		method string
		path   string
		header [2]string
		body   string
	}{
		{"a_no_token_legacy", "GET", "/api/v4/runners/router/discovery", [2]string{}, ""},
		{"b_routable_header", "GET", "/api/v4/runners/router/discovery", [2]string{"Runner-Token", tok}, ""},
		{"c_json_body", "POST", "/api/v4/jobs/request", [2]string{}, body},
		{"d_job_jwt_es256_cached", "GET", "/api/v4/jobs/42/artifacts", [2]string{"Job-Token", jwt}, ""},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			p := benchProxy(b, func(o *Options) { o.Verifier = verifier })
			edge := frontFor(b, p, front.Options{}, nil)
			b.ReportAllocs()
			for b.Loop() {
				var r *http.Request
				if c.body != "" {
					r = httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
					r.Header.Set("Content-Type", "application/json")
				} else {
					r = httptest.NewRequest(c.method, c.path, nil)
				}
				if c.header[0] != "" {
					r.Header[c.header[0]] = []string{c.header[1]}
				}
				w := httptest.NewRecorder()
				edge.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkServeHTTPAccess is one runner request with the access log off, through slog (the
// front's own logger, as server wrote it before), and through front.AccessLog, all to io.Discard.
func BenchmarkServeHTTPAccess(b *testing.B) {
	opts := &slog.HandlerOptions{}
	cases := []struct {
		name   string
		log    *slog.Logger
		access *front.AccessLog
		on     bool
	}{
		{"off", nil, nil, false},
		{"slog_json", slog.New(slog.NewJSONHandler(io.Discard, opts)), nil, true},
		{"slog_text", slog.New(slog.NewTextHandler(io.Discard, opts)), nil, true},
		{"line_json", nil, front.NewAccessLog(io.Discard, "json", true), true},
		{"line_text", nil, front.NewAccessLog(io.Discard, "text", true), true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			edge := frontFor(b, benchProxy(b, nil), front.Options{Log: c.log}, func(rt *front.Routes) { rt.AccessLog = c.on })
			if c.access != nil {
				edge.UseAccessLog(c.access)
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				edge.ServeHTTP(w, httptest.NewRequest("GET", "/api/v4/runners/router/discovery", nil))
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

func BenchmarkExtractJSONBodyToken(b *testing.B) {
	body := []byte(`{"token":"` + routable(b, 2) + `","last_update":"f2c1d8a","info":{"name":"runner","features":{"variables":true}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := bodyToken(bodyJSON, body); !ok {
			b.Fatal("no token")
		}
	}
}

func BenchmarkHeaderTokens(b *testing.B) {
	r := httptest.NewRequest("GET", "/api/v4/jobs/1/artifacts", nil)
	r.Header.Set("Job-Token", routable(b, 2))
	b.ReportAllocs()
	for b.Loop() {
		var f foundTokens
		headerAndQueryTokens(r, &f)
		if f.n != 1 {
			b.Fatal("no token")
		}
	}
}
