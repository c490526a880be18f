package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/browsertest"
	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

// appSetCookies are what the test workspace app's /set-cookies answers: every spelling of edge's
// session cookie an app could try, and cookies of its own, one with a Domain for every sibling.
var appSetCookies = []string{
	"edge_session; Domain=ws.localhost; Path=/",
	"edge_session=from-app; Path=/",
	"EDGE_SESSION=from-app; Path=/",
	`"edge_session"=from-app; Path=/`,
	"__HOST-edge_session=from-app; Path=/",
	"=edge_session; Path=/",
	"edge_bind=from-app; Path=/",
	"app_shared=1; Domain=ws.localhost; Path=/",
	"app=1; Path=/",
}

// TestWorkspaceLoginLimits: through the edge binary, unauthenticated requests from one address
// start at most 100 logins at once; the next gets 429 with Retry-After, counted and logged.
func TestWorkspaceLoginLimits(t *testing.T) {
	e := newWSEnv(t, 1, 0, time.Minute)
	c := testnet.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	status := func(path string) *http.Response {
		resp, err := c.Get(e.wsURL(0, "alice", path))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range 100 {
		if resp := status("/" + strings.Repeat("p", 30<<10)); resp.StatusCode != http.StatusFound {
			t.Fatalf("login %d: status %d, want 302", i, resp.StatusCode)
		}
	}
	resp := status("/one-more")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("login 101: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n, err := metricSum(e.edges[0].OpsURL+"/metrics", "edge_workspace_logins_total", `outcome="busy"`); err != nil || n != 1 {
		t.Errorf("edge_workspace_logins_total{outcome=busy} = %v (%v), want 1", n, err)
	}
	poll.Until(t, 5*time.Second, "the refusal in the log", func() bool {
		return strings.Contains(e.edges[0].out.String(), "too many logins in progress")
	})
}

// waitLocation waits until the tab's URL is want.
func waitLocation(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	poll.UntilState(t, 15*time.Second, "the browser at "+want, func() (bool, string) {
		loc := browsertest.Location(t, ctx)
		return loc == want, "at " + loc
	})
}

// TestWorkspaceHardeningInChromium: in headless Chromium against the edge binary,
//   - a workspace URL whose path is //evil.example logs in and ends on the workspace origin;
//   - an attacker's transfer link opened by the logged-in victim is refused and her session stays;
//   - a workspace app's Set-Cookie for edge's names (every spelling) is dropped and its Domain
//     removed: the browser stores no nameless cookie, no app value under edge's names, and the
//     app's cookies only for its own host;
//   - a logout posted from the workspace app's page (same site, another origin) is refused; the
//     logout page's own button logs out.
func TestWorkspaceHardeningInChromium(t *testing.T) {
	browsertest.Chromium(t)
	e := newWSEnv(t, 1, 0, time.Minute)
	ctx := browsertest.New(t)
	origin := strings.TrimSuffix(e.wsURL(0, "alice", ""), "/")
	host := strings.TrimPrefix(strings.Split(origin, ":")[1], "//")

	browsertest.Open(t, ctx, origin+"//evil.example", "#username")
	browsertest.Type(t, ctx, "#username", "alice")
	browsertest.Type(t, ctx, "#password", "pw-alice")
	browsertest.Click(t, ctx, "button[type=submit]")
	waitLocation(t, ctx, origin+"/")

	link := e.transferLink(0, "alice", "bob")
	browsertest.Open(t, ctx, link, "h1")
	if got := browsertest.Text(t, ctx, "h1"); got != "Login started elsewhere" {
		t.Errorf("the attacker's link in the victim's browser: page %q", got)
	}
	browsertest.Open(t, ctx, origin+"/page", "#ready")

	browsertest.Open(t, ctx, origin+"/set-cookies", "#set")
	cookies := browsertest.Cookies(t, ctx, origin+"/", "http://auth."+wsDomain+"/", "http://8080-bob."+wsDomain+"/")
	var names []string
	for _, ck := range cookies {
		names = append(names, ck.Name+"@"+ck.Domain)
		switch {
		case ck.Name == "":
			t.Errorf("a nameless cookie was stored: %q on %s", ck.Value, ck.Domain)
		case ck.Value == "from-app":
			t.Errorf("the app set %s=%s on %s", ck.Name, ck.Value, ck.Domain)
		case strings.HasPrefix(ck.Name, "app") && ck.Domain != host:
			t.Errorf("the app's cookie %s is stored for %s, want only %s", ck.Name, ck.Domain, host)
		}
	}
	if !strings.Contains(strings.Join(names, " "), "app_shared@"+host) {
		t.Errorf("cookies %v: want app_shared host-only on %s", names, host)
	}
	browsertest.Open(t, ctx, origin+"/page", "#ready") // the session still holds

	// A logout posted from the workspace app's page: Chromium sends its Origin, edge refuses.
	auth := "http://auth." + wsDomain + ":" + e.ports[0]
	browsertest.Eval[float64](t, ctx, `fetch("`+auth+`/logout", {method: "POST", mode: "no-cors", credentials: "include"}).then(() => 0, () => 0)`)
	browsertest.Open(t, ctx, origin+"/page", "#ready")
	if n, err := metricSum(e.edges[0].OpsURL+"/metrics", "edge_workspace_logins_total", `outcome="logout_refused"`); err != nil || n != 1 {
		t.Errorf("logout_refused = %v (%v), want 1", n, err)
	}

	browsertest.Open(t, ctx, auth+"/logout", "#logout")
	browsertest.Click(t, ctx, "#logout")
	waitText(t, ctx, "h1", "Logged out")
	browsertest.Open(t, ctx, origin+"/page", "#username")
}

// waitText waits until the element's text is want.
func waitText(t *testing.T, ctx context.Context, css, want string) {
	t.Helper()
	poll.UntilState(t, 15*time.Second, fmt.Sprintf("%s to read %q", css, want), func() (bool, string) {
		got := browsertest.Text(t, ctx, css)
		return got == want, fmt.Sprintf("reads %q", got)
	})
}
