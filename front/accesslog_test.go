package front

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/hop"
)

// durationsAsText is server's ReplaceAttr, which edge's slog handlers run with.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// slogLine is the line slog's own handler writes for the access record.
func slogLine(text bool, at time.Time, e *accessEntry) string {
	var buf bytes.Buffer
	opts := &slog.HandlerOptions{ReplaceAttr: durationsAsText}
	var h slog.Handler = slog.NewJSONHandler(&buf, opts)
	if text {
		h = slog.NewTextHandler(&buf, opts)
	}
	r := slog.NewRecord(at, slog.LevelInfo, "access", 0)
	r.AddAttrs(e.attrs()...)
	_ = h.Handle(context.Background(), r)
	return buf.String()
}

func checkLine(t *testing.T, at time.Time, e *accessEntry) {
	t.Helper()
	for _, format := range []string{"json", "text"} {
		l := NewAccessLog(nil, format, true)
		got := string(l.appendLine(nil, at, e))
		if want := slogLine(l.text, at, e); got != want {
			t.Errorf("%s line differs from slog's\n got %q\nwant %q", format, got, want)
		}
	}
}

func baseEntry() accessEntry {
	return accessEntry{
		method: "GET", path: "/api/v4/jobs/request", status: 200, bytes: 11, duration: 1234567 * time.Nanosecond,
		route: "runner", cell: 2, agent: "a1", rule: "job_id_range", cause: "cell_unreachable",
		requestID: "0123456789abcdef0123456789abcdef", remote: "192.0.2.1:54321",
	}
}

// TestAccessLineAsSlog: the line is slog's, byte for byte, in both formats, whatever the
// strings hold.
func TestAccessLineAsSlog(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 890123456, time.UTC)
	strs := []string{
		"", " ", "a b", "a=b", "=", `"quoted"`, `back\slash`, `\`, "tab\there", "line\nbreak", "cr\r",
		"nul\x00", "bell\a", "esc\x1b[31m", "del\x7f", "ls\u2028ps\u2029", "nbsp\u00a0", "zwsp\u200b",
		"bom\ufeff", "rtl\u202e", "soft\u00ad", "µs", "日本語", "emoji😀", "\ufffd", "bad\xff", "cut\xc3",
		"\xed\xa0\x80", "%2F..%00", "/a/b?c=d#e", "{}[]:,", "'single'",
		"/" + strings.Repeat("long/", 5000),
	}
	for c := 0; c < 0x80; c++ {
		strs = append(strs, "x"+string(rune(c))+"y")
	}
	for _, s := range strs {
		e := baseEntry()
		e.path, e.agent, e.cause, e.rule, e.method, e.requestID, e.remote = s, s, s, s, s, s, s
		checkLine(t, at, &e)
	}

	bare := accessEntry{method: "GET", path: "/", status: 499, route: "legacy"}
	checkLine(t, at, &bare)
	for _, d := range []time.Duration{0, 1, 999, 1500, 1234567, 59 * time.Second, 2*time.Hour + 3*time.Minute + 400*time.Millisecond, -1500 * time.Microsecond} {
		e := baseEntry()
		e.duration = d
		checkLine(t, at, &e)
	}
	for _, n := range []struct {
		status int
		bytes  int64
		cell   uint64
	}{{101, 0, 1}, {599, -1, 1<<64 - 1}, {0, 1<<63 - 1, 0}} {
		e := baseEntry()
		e.status, e.bytes, e.cell = n.status, n.bytes, n.cell
		checkLine(t, at, &e)
	}
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("IST", 5*3600+1800), time.FixedZone("", -7*3600), time.FixedZone("odd", 61)}
	for _, z := range zones {
		for _, ns := range []int{0, 1, 999999, 1000000, 100000000, 120000000, 999999999, 500} {
			e := baseEntry()
			checkLine(t, time.Date(2024, 12, 31, 23, 59, 59, ns, z), &e)
		}
	}
	e := baseEntry()
	checkLine(t, time.Now(), &e) // with a monotonic reading, which slog strips
}

func FuzzAccessLine(f *testing.F) {
	f.Add("/api/v4/jobs/request", "a1", "", int64(1234567), int64(1741064767890123456), uint64(2))
	f.Add("a b=\"c\"\\", "\u2028\x00\xff", "\u200b ", int64(-1), int64(0), uint64(0))
	f.Add("", "", "µ", int64(1<<62), int64(-1<<62), uint64(1<<64-1))
	zone := time.FixedZone("", -(3*3600 + 1800))
	f.Fuzz(func(t *testing.T, path, agent, cause string, d, nanos int64, cell uint64) {
		e := baseEntry()
		e.path, e.agent, e.cause, e.duration, e.cell = path, agent, cause, time.Duration(d), cell
		checkLine(t, time.Unix(0, nanos).In(zone), &e)
	})
}

// TestAccessLogWritesNothingBelowInfo: a log level above info writes no access lines.
func TestAccessLogWritesNothingBelowInfo(t *testing.T) {
	var out bytes.Buffer
	front := accessFront(t, NewAccessLog(&out, "json", false))
	front.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://w.ws.example/", nil))
	if out.Len() != 0 {
		t.Errorf("access line written with info off: %q", out.String())
	}
}

// TestAccessLogNoAllocation: a line costs no allocation once the pool holds a buffer.
func TestAccessLogNoAllocation(t *testing.T) {
	l := NewAccessLog(discardWriter{}, "text", true)
	e := baseEntry()
	at := time.Now()
	if n := testing.AllocsPerRun(1000, func() { l.write(at, &e) }); n != 0 {
		t.Errorf("%v allocations per line", n)
	}
}

// discardWriter is io.Discard without its WriteString, so write's one Write call is measured.
type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// lineChecker takes lines written at once and keeps the request id of each, refusing a Write
// that is not exactly one whole, uncorrupted access line (its path repeats its request id).
type lineChecker struct {
	mu  sync.Mutex
	ids map[string]int
	bad []string
}

func (c *lineChecker) Write(p []byte) (int, error) {
	var v struct{ Msg, Path, Request_ID string }
	ok := bytes.IndexByte(p, '\n') == len(p)-1 && json.Unmarshal(p, &v) == nil &&
		v.Msg == "access" && v.Path == "/"+v.Request_ID
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok {
		c.bad = append(c.bad, string(p))
	} else {
		c.ids[v.Request_ID]++
	}
	return len(p), nil
}

func accessFront(t *testing.T, l *AccessLog) *Front {
	t.Helper()
	rt := testRoutes(Route{Name: "workspace", Domain: "ws.example", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	})})
	rt.AccessLog = true
	rt.Headers.Trusted = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")} // httptest's remote
	front := New(Options{})
	if err := front.Swap(rt); err != nil {
		t.Fatal(err)
	}
	front.UseAccessLog(l)
	return front
}

// TestAccessLogConcurrent: requests served at once each write one whole line, none lost and
// none mixed with another's.
func TestAccessLogConcurrent(t *testing.T) {
	const goroutines, each = 16, 300
	c := &lineChecker{ids: map[string]int{}}
	front := accessFront(t, NewAccessLog(c, "json", true))
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				// From a trusted proxy, whose request id the front keeps: the line's path repeats it.
				id := fmt.Sprintf("g%d-%d", g, i)
				r := httptest.NewRequest("GET", "http://w.ws.example/"+id, nil)
				r.Header.Set(hop.HeaderRequestID, id)
				front.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
	wg.Wait()
	if len(c.bad) != 0 {
		t.Fatalf("%d bad writes, first %q", len(c.bad), c.bad[0])
	}
	if len(c.ids) != goroutines*each {
		t.Errorf("%d request ids logged, want %d", len(c.ids), goroutines*each)
	}
	for id, n := range c.ids {
		if n != 1 {
			t.Errorf("request %s logged %d times", id, n)
		}
	}
}

// BenchmarkAccessLine is the access line alone: through slog as before, and through front.AccessLog.
func BenchmarkAccessLine(b *testing.B) {
	e := baseEntry()
	opts := &slog.HandlerOptions{ReplaceAttr: durationsAsText}
	for _, format := range []string{"json", "text"} {
		var h slog.Handler = slog.NewJSONHandler(io.Discard, opts)
		if format == "text" {
			h = slog.NewTextHandler(io.Discard, opts)
		}
		b.Run("slog_"+format, func(b *testing.B) {
			log := slog.New(h)
			b.ReportAllocs()
			for b.Loop() {
				log.LogAttrs(b.Context(), slog.LevelInfo, "access", e.attrs()...)
			}
		})
		b.Run("line_"+format, func(b *testing.B) {
			l := NewAccessLog(io.Discard, format, true)
			b.ReportAllocs()
			for b.Loop() {
				l.write(time.Now(), &e)
			}
		})
	}
}
