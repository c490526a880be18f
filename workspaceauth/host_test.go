package workspaceauth

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	const domain = "workspaces.example.com"
	tests := []struct {
		header    string
		ok        bool
		port      int
		workspace string
	}{
		{"60001-ws-7f3a.workspaces.example.com", true, 60001, "ws-7f3a"},
		{"60001-WS-7F3A.Workspaces.Example.COM:8443", true, 60001, "ws-7f3a"},
		{"1-a.workspaces.example.com", true, 1, "a"},
		{"65535-a.workspaces.example.com", true, 65535, "a"},
		{"65536-a.workspaces.example.com", false, 0, ""},
		{"0-a.workspaces.example.com", false, 0, ""},
		{"080-a.workspaces.example.com", false, 0, ""},
		{"8080-.workspaces.example.com", false, 0, ""},
		{"8080-a-.workspaces.example.com", false, 0, ""},
		{"8080--a.workspaces.example.com", false, 0, ""},
		{"8080-a_b.workspaces.example.com", false, 0, ""},
		{"8080-a.workspaces.example.com.", false, 0, ""},
		{"8080-a.b.workspaces.example.com", false, 0, ""},
		{"8080-a.workspaces.example.com.evil.com", false, 0, ""},
		{"8080-a.evilworkspaces.example.com", false, 0, ""},
		{"8080-a.workspaces.example.co", false, 0, ""},
		{"workspaces.example.com", false, 0, ""},
		{"auth.workspaces.example.com", false, 0, ""},
		{"a.workspaces.example.com", false, 0, ""},
		{"8080a.workspaces.example.com", false, 0, ""},
		{"+80-a.workspaces.example.com", false, 0, ""},
		{"8080-a.workspaces.example.com:", false, 0, ""},
		{"8080-a.workspaces.example.com:80x", false, 0, ""},
		{"8080-a.workspaces.example.com:80:80", false, 0, ""},
		{"[::1]:80", false, 0, ""},
		{"8080-\u212a.workspaces.example.com", false, 0, ""},
		{"", false, 0, ""},
		{"8080-" + strings.Repeat("a", 63) + ".workspaces.example.com", true, 8080, strings.Repeat("a", 63)},
		{"8080-" + strings.Repeat("a", 64) + ".workspaces.example.com", false, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			h, ok := ParseHost(tt.header, domain)
			if ok != tt.ok || h.Port != tt.port || h.Workspace != tt.workspace {
				t.Errorf("ParseHost(%q): got %+v %v, want port %d workspace %q ok %v", tt.header, h, ok, tt.port, tt.workspace, tt.ok)
			}
			if ok && h.Name != strconv.Itoa(tt.port)+"-"+tt.workspace+"."+domain {
				t.Errorf("Name: got %q", h.Name)
			}
		})
	}
}

// FuzzParseHost: whatever is accepted rebuilds to the same host name, and only such names are.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"60001-ws-7f3a.ws.example.com", "1-a.ws.example.com:8080", "8080-a.ws.example.com.", "x", "8080-a.b.ws.example.com", "[::1]:8080", "00-a.ws.example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		h, ok := ParseHost(header, "ws.example.com")
		if !ok {
			return
		}
		if want := strconv.Itoa(h.Port) + "-" + h.Workspace + ".ws.example.com"; h.Name != want {
			t.Errorf("%q: name %q, want %q", header, h.Name, want)
		}
		if h.Port < 1 || h.Port > 65535 || !IsLabel(h.Workspace) {
			t.Errorf("%q: accepted port %d workspace %q", header, h.Port, h.Workspace)
		}
		if !strings.HasPrefix(h.Authority, h.Name) || !strings.EqualFold(header, h.Authority) {
			t.Errorf("%q: authority %q", header, h.Authority)
		}
		again, ok := ParseHost(h.Authority, "ws.example.com")
		if !ok || again != h {
			t.Errorf("%q: not stable: %+v", header, again)
		}
	})
}
