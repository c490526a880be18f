package tunnel

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func itoa(i int) string { return strconv.Itoa(i) }

func TestParsePort(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"80", 80, true}, {"65535", 65535, true}, {"1", 1, true},
		{"0", 0, false}, {"080", 0, false}, {"65536", 0, false}, {"+80", 0, false},
		{"-1", 0, false}, {"8 0", 0, false}, {"", 0, false}, {"123456", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parsePort(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parsePort(%q): got %d %v, want %d %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestInfoHeader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"empty", "", true},
		{"full", `{"version":"v1","commit":"c","pod_namespace":"ns","pod_name":"p"}`, true},
		{"unknown field", `{"version":"v1","extra":1}`, true},
		{"not json", `v1`, false},
		{"control char", `{"version":"v1\n"}`, false},
		{"too long field", `{"pod_name":"` + strings.Repeat("a", 300) + `"}`, false},
		{"too long header", `{"pod_name":"` + strings.Repeat("a", 5000) + `"}`, false},
		{"features", `{"version":"v1","features":["splice","other-1"]}`, true},
		{"bad feature", `{"features":["splice now"]}`, false},
		{"too many features", `{"features":["a","b","c","d","e","f","g","h","i"]}`, false},
		{"longest valid", `{"version":"` + strings.Repeat(`\"`, 253) + `","commit":"` + strings.Repeat(`\\`, 253) + `","pod_namespace":"` + strings.Repeat(`\"`, 253) + `","pod_name":"` + strings.Repeat(`<`, 253) + `"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseInfoHeader(tt.in); (err == nil) != tt.ok {
				t.Errorf("parseInfoHeader: got %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestIsUpgrade(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want bool
	}{
		{"plain", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"edge-tunnel"}}, true},
		{"case and lists", http.Header{"Connection": {"keep-alive, upgrade"}, "Upgrade": {"h2c, EDGE-TUNNEL"}}, true},
		{"no connection", http.Header{"Upgrade": {"edge-tunnel"}}, false},
		{"websocket", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, false},
	}
	for _, tt := range tests {
		if got := isUpgrade(tt.h); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	b := backoff{min: time.Second, max: 20 * time.Second}
	for i := range 10 {
		d := b.wait(nil)
		lo, hi := time.Second<<i/2, time.Second<<i
		if hi > 20*time.Second {
			lo, hi = 10*time.Second, 20*time.Second
		}
		if d < lo || d > hi {
			t.Errorf("attempt %d: got %v, want within [%v, %v]", i, d, lo, hi)
		}
	}
	b.reset()
	if d := b.wait(&StatusError{StatusCode: http.StatusUnauthorized}); d < 10*time.Second {
		t.Errorf("after 401: got %v, want the longest wait (>= 10s)", d)
	}
	if d := b.wait(nil); d > time.Second && d < 10*time.Second {
		t.Errorf("after a 401 the next wait stays long: got %v", d)
	}
}

func TestNewAgentOptions(t *testing.T) {
	ok := AgentOptions{EdgeURL: "https://edge.example.com/prefix/", Token: TokenFile("x"), Upstreams: AllowPorts(8080),
		WriteError: testWriteError, RemoveEdgeHeaders: testRemoveEdgeHeaders}
	tests := []struct {
		name   string
		modify func(*AgentOptions)
		ok     bool
	}{
		{"valid", func(*AgentOptions) {}, true},
		{"ws scheme", func(o *AgentOptions) { o.EdgeURL = "ws://edge" }, false},
		{"no host", func(o *AgentOptions) { o.EdgeURL = "https:///x" }, false},
		{"no token", func(o *AgentOptions) { o.Token = nil }, false},
		{"no upstreams", func(o *AgentOptions) { o.Upstreams = nil }, false},
		{"bad info", func(o *AgentOptions) { o.Info.PodName = "a\nb" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.modify(&o)
			a, err := NewAgent(o)
			if (err == nil) != tt.ok {
				t.Fatalf("NewAgent: got %v, want ok=%v", err, tt.ok)
			}
			if err == nil && a.connectURL != "https://edge.example.com/prefix"+ConnectPath {
				t.Errorf("connect URL: got %q", a.connectURL)
			}
		})
	}
}

// Whatever an agent sends, an accepted info header re-encodes to the same info.
func FuzzInfoHeader(f *testing.F) {
	f.Add(`{"version":"v1.2.3","commit":"abc123","pod_namespace":"ns","pod_name":"agent-pod"}`)
	f.Add(`{}`)
	f.Add(`{"version":"\u0000"}`)
	f.Add(`[1,2]`)
	f.Add(`{"version":"v2","features":["splice"]}`)
	f.Add(`{"features":[]}`)
	f.Add(`{"features":["Splice","a b"]}`)
	f.Add(`{"version":"` + strings.Repeat(`\"`, 253) + `","pod_name":"` + strings.Repeat(`<`, 253) + `"}`)
	f.Fuzz(func(t *testing.T, h string) {
		info, err := parseInfoHeader(h)
		if err != nil {
			return
		}
		again, err := info.header()
		if err != nil {
			t.Fatalf("accepted %q but cannot send it back: %v", h, err)
		}
		if back, err := parseInfoHeader(again); err != nil || !reflect.DeepEqual(back, info) {
			t.Errorf("round trip of %q: got %+v %v, want %+v", h, back, err, info)
		}
	})
}
