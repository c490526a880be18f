package server

import (
	"net"
	"strings"
	"testing"
)

// TestOpenListenersClosesOnFailure: when a later listener cannot be opened, every one opened
// before it is closed again (its port can be bound at once), whichever fails.
func TestOpenListenersClosesOnFailure(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, failing := range []string{"listen.ops", "listen.internal", "listen.ssh", "tls.redirect_http"} {
		t.Run(failing, func(t *testing.T) {
			addrs := map[string]string{}
			for _, s := range []string{"listen.public", "listen.ops", "listen.internal", "listen.ssh", "tls.redirect_http"} {
				addrs[s] = freePort(t)
			}
			addrs[failing] = busy.Addr().String()
			var mods []module
			for _, s := range []string{"listen.public", "listen.ops", "listen.internal", "listen.ssh", "tls.redirect_http"} {
				mods = append(mods, module{listeners: []*listener{{setting: s, addr: addrs[s]}}})
			}
			if err := openListeners(mods); err == nil || !strings.HasPrefix(err.Error(), failing+":") {
				t.Fatalf("error %v, want one naming %s", err, failing)
			}
			for setting, addr := range addrs {
				if setting == failing {
					continue
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Errorf("%s (%s) is still held: %v", setting, addr, err)
					continue
				}
				ln.Close()
			}
		})
	}
}

// freePort is a loopback address whose port was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
