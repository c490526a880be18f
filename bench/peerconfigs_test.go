package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHAProxyConfig asks HAProxy itself whether the generated config is valid, when HAProxy is
// here (edgebench installs it; make test does not need it).
func TestHAProxyConfig(t *testing.T) {
	cfg := HAProxyConfig(8080, 3001)
	for _, want := range []string{"nbthread 1", "mode http", "http-reuse always", "option http-keep-alive",
		"bind 127.0.0.1:8080", "server u1 127.0.0.1:3001", "timeout client"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy config lacks %q", want)
		}
	}
	if strings.Contains(cfg, "log ") {
		t.Errorf("haproxy config logs:\n%s", cfg)
	}
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		if haproxy = "/usr/sbin/haproxy"; !fileIsThere(haproxy) {
			t.Fatal("haproxy not installed: make test installs it (scripts/deps.sh haproxy=haproxy)")
		}
	}
	conf := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(haproxy, "-c", "-q", "-f", conf).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("haproxy -c: %v\n%s", err, out)
	}
}

func fileIsThere(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestCaddyConfig(t *testing.T) {
	cfg, err := CaddyConfig(8080, 3001)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Admin struct {
			Disabled bool
			Config   struct{ Persist *bool }
		}
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Listen []string
					Logs   any
					Routes []struct {
						Handle []struct {
							Handler   string
							Upstreams []struct{ Dial string }
							Transport struct {
								Protocol  string
								KeepAlive struct {
									MaxIdleConnsPerHost int `json:"max_idle_conns_per_host"`
								} `json:"keep_alive"`
							}
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(cfg), &doc); err != nil {
		t.Fatalf("caddy config is not JSON: %v\n%s", err, cfg)
	}
	if !doc.Admin.Disabled || doc.Admin.Config.Persist == nil || *doc.Admin.Config.Persist {
		t.Errorf("admin: got %+v, want disabled and not persisted", doc.Admin)
	}
	srv, ok := doc.Apps.HTTP.Servers["bench"]
	if !ok || len(srv.Listen) != 1 || srv.Listen[0] != "127.0.0.1:8080" || srv.Logs != nil {
		t.Fatalf("server: got %+v, want one listener on 127.0.0.1:8080 and no access log", srv)
	}
	if len(srv.Routes) != 1 || len(srv.Routes[0].Handle) != 1 {
		t.Fatalf("routes: got %+v, want one route with one handler", srv.Routes)
	}
	h := srv.Routes[0].Handle[0]
	if h.Handler != "reverse_proxy" || len(h.Upstreams) != 1 || h.Upstreams[0].Dial != "127.0.0.1:3001" ||
		h.Transport.Protocol != "http" || h.Transport.KeepAlive.MaxIdleConnsPerHost != 64 {
		t.Errorf("handler: got %+v", h)
	}
}
