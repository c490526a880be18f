package integration

import (
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/browsertest"
)

// TestWorkspaceInChromium: headless Chromium opens alice's workspace URL, logs in at the
// provider, lands on the workspace page served through the agent's tunnel and exchanges
// WebSocket messages; revoking alice's access in the authorizer file closes the open WebSocket
// within the recheck interval; in the same browser bob's workspace is denied. Once with the agent
// on the entry edge, once with it on a second edge (Redis registry).
func TestWorkspaceInChromium(t *testing.T) {
	browsertest.Chromium(t)
	for _, tt := range []struct {
		name          string
		edges, holder int
	}{
		{"agent on the entry edge", 1, 0},
		{"agent on another edge", 2, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newWSEnv(t, tt.edges, tt.holder, time.Second)
			ctx := browsertest.New(t)
			browsertest.Open(t, ctx, e.wsURL(0, "alice", "/page"), "#username")
			if loc := browsertest.Location(t, ctx); !strings.HasPrefix(loc, e.op.Issuer) {
				t.Fatalf("login page at %s, want the provider", loc)
			}
			browsertest.Type(t, ctx, "#username", "alice")
			browsertest.Type(t, ctx, "#password", "pw-alice")
			browsertest.Click(t, ctx, "button[type=submit]")
			browsertest.WaitVisible(t, ctx, "#ready")
			if loc := browsertest.Location(t, ctx); loc != e.wsURL(0, "alice", "/page") {
				t.Errorf("landed on %s, want the URL asked for", loc)
			}
			for _, msg := range []string{"hello", "through the tunnel"} {
				if got := browsertest.Eval[string](t, ctx, `echo(`+jsString(msg)+`)`); got != msg {
					t.Errorf("WebSocket echo: got %q, want %q", got, msg)
				}
			}

			// Revoke: the open WebSocket is closed within the recheck interval (1 s) plus the
			// authorizer file's poll (1 s).
			e.setAccess(map[string][]string{"alice": {"carol"}, "bob": {"bob"}})
			got := browsertest.Eval[string](t, ctx, `Promise.race([wsClosed, new Promise(r => setTimeout(() => r("still open"), 15000))])`)
			if !strings.HasPrefix(got, "closed") {
				t.Errorf("after revocation the WebSocket is %s, want closed", got)
			}

			// Bob's workspace, in the same browser: a login for that host, then 403 for alice.
			browsertest.Open(t, ctx, e.wsURL(0, "bob", "/page"), "#username")
			browsertest.Type(t, ctx, "#username", "alice")
			browsertest.Type(t, ctx, "#password", "pw-alice")
			browsertest.Click(t, ctx, "button[type=submit]")
			if got := browsertest.Text(t, ctx, "h1"); got != "Forbidden" {
				t.Errorf("alice on bob's workspace: page %q, want Forbidden", got)
			}
		})
	}
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
