package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Do runs chromedp actions in the tab, failing the test on the first error.
func Do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browsertest: %v (at %s)", err, location(ctx))
	}
}

// Open navigates to url and waits until the element matching the CSS selector is visible.
func Open(t testing.TB, ctx context.Context, url, css string) {
	t.Helper()
	Do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(css)))
}

// WaitVisible waits until the element matching the CSS selector is visible.
func WaitVisible(t testing.TB, ctx context.Context, css string) {
	t.Helper()
	Do(t, ctx, chromedp.WaitVisible(chromedp.CSS(css)))
}

// Type types text into the element matching the CSS selector, key by key.
func Type(t testing.TB, ctx context.Context, css, text string) {
	t.Helper()
	Do(t, ctx, chromedp.SendKeys(chromedp.CSS(css), text))
}

// Click clicks the element matching the CSS selector.
func Click(t testing.TB, ctx context.Context, css string) {
	t.Helper()
	Do(t, ctx, chromedp.Click(chromedp.CSS(css)))
}

// Text waits until the element matching the CSS selector is visible and returns its text as shown.
func Text(t testing.TB, ctx context.Context, css string) string {
	t.Helper()
	return run(t, ctx, func(ctx context.Context, tg *chromedp.Target) (string, error) {
		for {
			if _, err := chromedp.WaitVisible(chromedp.CSS(css))(ctx, tg); err != nil {
				return "", err
			}
			text, err := chromedp.Text(chromedp.CSS(css))(ctx, tg)
			// The page may navigate between finding the element and reading it (a form just
			// posted): the node is gone, and the element to read is on the next page.
			if err != nil && strings.Contains(err.Error(), "No node with given id") && ctx.Err() == nil {
				continue
			}
			return text, err
		}
	})
}

// Eval evaluates a JavaScript expression in the page, waits for it if it is a promise, and decodes
// its value (JSON) into a T. A thrown exception or a rejected promise fails the test.
func Eval[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}

// Location is the tab's current URL.
func Location(t testing.TB, ctx context.Context) string {
	t.Helper()
	return run(t, ctx, chromedp.Location())
}

// Cookies are the cookies the browser holds for any of the URLs: what it would send them.
func Cookies(t testing.TB, ctx context.Context, urls ...string) []*network.Cookie {
	t.Helper()
	return run(t, ctx, func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: urls})
		return res.Cookies, err
	})
}

// Screenshot saves a PNG of the tab in the system's temporary directory (kept after the test, to be
// looked at) and returns its path.
func Screenshot(t testing.TB, ctx context.Context) string {
	t.Helper()
	png := run(t, ctx, chromedp.CaptureScreenshot())
	path, err := writeScreenshot(t.Name(), png)
	if err != nil {
		t.Fatalf("browsertest: %v", err)
	}
	return path
}

func run[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browsertest: %v (at %s)", err, location(ctx))
	}
	return v
}

// location is the tab's URL for an error message, or why it is unknown.
func location(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepTimeout/10)
	defer cancel()
	u, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "unknown URL: " + err.Error()
	}
	return u
}

func writeScreenshot(testName string, png []byte) (string, error) {
	name := regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(testName, "_")
	f, err := os.CreateTemp("", "browsertest-"+name+"-*.png")
	if err != nil {
		return "", fmt.Errorf("screenshot: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(png); err != nil {
		return "", fmt.Errorf("screenshot: %w", err)
	}
	return filepath.Clean(f.Name()), nil
}

// describe logs what the tab shows, for a failed test.
func describe(t testing.TB, ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout/3)
	defer cancel()
	t.Logf("browsertest: the tab is at %s", location(ctx))
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`)); err == nil {
		if len(text) > 2000 {
			text = text[:2000] + "..."
		}
		t.Logf("browsertest: the page says:\n%s", text)
	}
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		if path, err := writeScreenshot(t.Name(), png); err == nil {
			t.Logf("browsertest: screenshot: %s", path)
		}
	}
}
