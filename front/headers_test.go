package front

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"testing"

	"gitlab.com/edge/edge/hop"
)

func TestHeaderPolicyClean(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		in      http.Header
		trusted bool
		keep    []string // headers that must remain
		gone    []string // headers that must be removed
		refused bool
	}{
		{name: "edge headers in every spelling", in: http.Header{"Edge-Cell": {"3"}, "Edge_cell": {"3"}, "Edge-agent_id": {"a"}, "Edgey": {"x"}},
			keep: []string{"Edgey"}, gone: []string{"Edge-Cell", "Edge_cell", "Edge-agent_id"}},
		{name: "agent info on the agent connect", path: "/-/agent/connect", in: http.Header{"Edge-Agent-Info": {"{}"}, "Edge_agent_info": {"{}"}, "Edge-Agent-Id": {"a"}},
			keep: []string{"Edge-Agent-Info"}, gone: []string{"Edge_agent_info", "Edge-Agent-Id"}},
		{name: "agent info elsewhere", path: "/-/agent/connect/x", in: http.Header{"Edge-Agent-Info": {"{}"}}, gone: []string{"Edge-Agent-Info"}},
		{name: "forwarding family from an untrusted peer", in: http.Header{"Forwarded": {"for=1"}, "X-Forwarded-For": {"1"}, "X-Forwarded-Port": {"1"},
			"X-Forwarded-Prefix": {"/"}, "X-Forwarded-Ssl": {"on"}, "X-Forwarded-Uri": {"/"}, "X-Real-Ip": {"1"}, "X_forwarded_host": {"h"}, "X-Request-Id": {"r"}, "X-Forwardedness": {"k"}},
			keep: []string{"X-Forwardedness"}, gone: []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Port", "X-Forwarded-Prefix", "X-Forwarded-Ssl", "X-Forwarded-Uri", "X-Real-Ip", "X_forwarded_host", "X-Request-Id"}},
		{name: "forwarding family from a trusted peer", trusted: true, in: http.Header{"X-Forwarded-For": {"1"}, "X-Real-Ip": {"1"}, "X-Request-Id": {"r"}},
			keep: []string{"X-Forwarded-For", "X-Real-Ip", "X-Request-Id"}},
		{name: "h2c settings", in: http.Header{"Http2-Settings": {"AAA"}}, gone: []string{"Http2-Settings"}},
		{name: "token header twice", in: http.Header{"Job-Token": {"a", "a"}}, refused: true},
		{name: "token header underscore", in: http.Header{"Private_token": {"a"}}, refused: true},
		{name: "token header both spellings", in: http.Header{"Runner-Token": {"a"}, "Runner_token": {"a"}}, refused: true},
		{name: "Authorization twice", in: http.Header{"Authorization": {"Bearer a", "Bearer b"}}, refused: true},
		{name: "same kind, different values", in: http.Header{"Runner-Token": {"glrt-aaa"}, "Authorization": {"Bearer glrt-bbb"}}, refused: true},
		{name: "same kind, same value", in: http.Header{"Runner-Token": {"glrt-aaa"}, "Authorization": {"Bearer glrt-aaa"}}, keep: []string{"Runner-Token", "Authorization"}},
		{name: "two kinds", in: http.Header{"Private-Token": {"glpat-aaa"}, "Job-Token": {"glcbt-bbb"}}, keep: []string{"Private-Token", "Job-Token"}},
		{name: "two opaque tokens", in: http.Header{"Private-Token": {"aaa"}, "Job-Token": {"bbb"}}, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hp := &HeaderPolicy{}
			r := &http.Request{Header: tt.in}
			if tt.path != "" {
				r.URL = &url.URL{Path: tt.path}
			}
			err := hp.clean(r, tt.trusted)
			if got := errors.Is(err, hop.ErrAmbiguousHeaders); got != tt.refused {
				t.Fatalf("refused: got %v (%v), want %v", got, err, tt.refused)
			}
			for _, k := range tt.keep {
				if _, ok := r.Header[k]; !ok {
					t.Errorf("%s removed, want kept", k)
				}
			}
			for _, k := range tt.gone {
				if _, ok := r.Header[k]; ok {
					t.Errorf("%s kept, want removed", k)
				}
			}
		})
	}
}

func TestHeaderPolicyTrusted(t *testing.T) {
	hp := &HeaderPolicy{Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	for addr, want := range map[string]bool{"10.1.2.3:5": true, "[::ffff:10.1.2.3]:5": true, "11.0.0.1:5": false, "garbage": false} {
		if got := hp.trusted(addr); got != want {
			t.Errorf("trusted(%s): got %v, want %v", addr, got, want)
		}
	}
}

func TestUpgradeOnlyWhereAllowed(t *testing.T) {
	tests := []struct {
		upgrade string
		rule    Upgrade
		kept    bool
	}{
		{"h2c", UpgradeWebSocket, false},
		{"h2c", UpgradeNone, false},
		{"websocket", UpgradeWebSocket, true},
		{"WebSocket", UpgradeWebSocket, true},
		{"websocket", UpgradeNone, false},
		{"websocket, h2c", UpgradeWebSocket, false},
		{"edge-tunnel", UpgradeTunnel, true},
		{"edge-tunnel", UpgradeWebSocket, false},
		{"websocket", UpgradeTunnel, false},
	}
	for _, tt := range tests {
		h := http.Header{"Upgrade": {tt.upgrade}}
		upgrade(h, tt.rule)
		if _, kept := h["Upgrade"]; kept != tt.kept {
			t.Errorf("Upgrade %q under rule %d: kept %v, want %v", tt.upgrade, tt.rule, kept, tt.kept)
		}
	}
}
