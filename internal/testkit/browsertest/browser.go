// Package browsertest drives Debian's headless Chromium from tests, with chromedp.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// stepTimeout bounds each helper call, so that a page that never shows what a test waits for
// fails the test rather than hanging it until go test's own timeout.
const stepTimeout = 30 * time.Second

// Chromium is the path of Debian's chromium; the test fails when it is not installed.
func Chromium(t testing.TB) string {
	t.Helper()
	if path, err := exec.LookPath("chromium"); err == nil {
		return path
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Fatalf("browsertest: chromium is not installed: install Debian's chromium package (make deps does: ./scripts/deps.sh chromium=chromium)")
	return ""
}

// New starts a fresh headless Chromium (its own new user data directory, removed afterwards) with one
// tab, and returns the chromedp context of that tab for chromedp.Run and the helpers of this package.
// The browser is closed when the test ends; if the test failed, the tab's URL, text and a screenshot
// are logged first.
func New(t testing.TB) context.Context {
	t.Helper()
	out := &tail{}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)),
		chromedp.Headless,
		// As root (here, and in CI) Chromium runs only without its sandbox.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// The machine has no network but loopback: without these, Chromium keeps trying to reach
		// Google's hosts, and each refused connection is noise or a delay.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.WindowSize(1280, 800),
		chromedp.CombinedOutput(out),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// cancelAlloc waits for the browser process to end and removes its user data directory.
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browsertest: start chromium: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			describe(t, ctx)
		}
	})
	return ctx
}

// tail keeps the last bytes Chromium wrote to stdout and stderr, to say why it did not start (what
// it says once started is mostly its complaints about the missing D-Bus).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4 << 10

func (b *tail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailSize {
		b.buf = b.buf[len(b.buf)-tailSize:]
	}
	return len(p), nil
}

func (b *tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
