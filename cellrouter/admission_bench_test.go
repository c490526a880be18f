package cellrouter

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"gitlab.com/edge/edge/admission"
	"gitlab.com/edge/edge/front"
	"gitlab.com/edge/edge/wire"
)

// jobTransport answers every jobs/request with a job, as a cell hands one out.
type jobTransport struct{ payload string }

func (t jobTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusCreated, ProtoMajor: 1, ProtoMinor: 1, Request: r, ContentLength: int64(len(t.payload)),
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(t.payload)),
	}, nil
}

// benchJob is a job answer of about the size GitLab sends: 40 variables, a few steps.
func benchJob() string {
	vars := make([]map[string]any, 40)
	for i := range vars {
		vars[i] = map[string]any{"key": fmt.Sprintf("VAR_%d", i), "value": strings.Repeat("v", 40), "public": i%2 == 0, "masked": i%2 == 1}
	}
	b, _ := json.Marshal(map[string]any{
		"id": 2000001, "token": "glcbt-" + strings.Repeat("t", 300),
		"job_info":  map[string]any{"id": 2000001, "name": "rspec 1/4", "stage": "test", "project_id": 42, "project_name": "shop"},
		"git_info":  map[string]any{"repo_url": "https://gitlab-ci-token:x@gitlab.example.com/acme/shop.git", "ref": "main", "sha": strings.Repeat("a", 40)},
		"image":     map[string]any{"name": "ruby:3.3"},
		"services":  []any{map[string]any{"name": "postgres:16"}},
		"variables": vars,
		"steps":     []any{map[string]any{"name": "script", "script": []string{strings.Repeat("bundle exec rspec ", 20)}}},
	})
	return string(b)
}

// BenchmarkAdmission is one jobs/request answered with a job, without admission and with one
// and three controllers on loopback. admission_us/op is the time admission added to the answer
// (reading the job and asking every controller); with a controller that takes 2 ms,
// over_slowest_us/op is what admission added beyond that controller's time as edge saw it (its
// call, round trip included).
func BenchmarkAdmission(b *testing.B) {
	payload := benchJob()
	controllers := func(n int, slowest time.Duration) []*admission.Controller {
		transport := &http.Transport{MaxIdleConnsPerHost: 64}
		var out []*admission.Controller
		for i := range n {
			hold := time.Duration(0)
			if i == n-1 {
				hold = slowest
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				time.Sleep(hold)
				io.WriteString(w, `{"admitted":true}`)
			}))
			b.Cleanup(srv.Close)
			out = append(out, &admission.Controller{Name: fmt.Sprint("c", i), URL: srv.URL, Transport: transport})
		}
		return out
	}
	tok := routable(b, 2)
	body := `{"token":"` + tok + `","last_update":"f2c1d8a","info":{"name":"runner","version":"17.11.0","executor":"docker","platform":"linux","architecture":"amd64","features":{"variables":true,"artifacts":true}}}`
	cases := []struct {
		name    string
		n       int
		slowest time.Duration
	}{{"off", 0, 0}, {"1_controller", 1, 0}, {"3_controllers", 3, 0}, {"3_controllers_slowest_2ms", 3, 2 * time.Millisecond}}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var m *Metrics
			p := benchProxy(b, func(o *Options) {
				o.Transport = jobTransport{payload}
				if c.n > 0 {
					o.Admission = &Admission{Controllers: controllers(c.n, c.slowest)}
				}
				m = o.Metrics
			})
			if m == nil {
				m = p.metrics
			}
			edge := frontFor(b, p, front.Options{}, nil)
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("POST", wire.JobsRequestPath, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				edge.ServeHTTP(w, r)
				if w.Code != http.StatusCreated || w.Body.Len() != len(payload) {
					b.Fatalf("status %d, %d bytes", w.Code, w.Body.Len())
				}
			}
			if c.n == 0 {
				return
			}
			var h dto.Metric
			if err := m.admission.duration.Write(&h); err != nil || h.Histogram.GetSampleCount() == 0 {
				b.Fatal("no admission observed", err)
			}
			added := h.Histogram.GetSampleSum() / float64(h.Histogram.GetSampleCount()) * 1e6
			b.ReportMetric(added, "admission_us/op")
			if c.slowest > 0 {
				var s dto.Metric
				if err := m.admission.calls.WithLabelValues(fmt.Sprint("c", c.n-1)).(prometheus.Metric).Write(&s); err != nil {
					b.Fatal(err)
				}
				slowest := s.Histogram.GetSampleSum() / float64(s.Histogram.GetSampleCount()) * 1e6
				b.ReportMetric(added-slowest, "over_slowest_us/op")
			}
		})
	}
}
