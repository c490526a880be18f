package oidctest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// maxHops bounds the redirects Login follows on the provider.
const maxHops = 10

// Login logs in at the provider as a browser would, with client (give it a cookie jar): it opens
// authURL (the provider's authorization URL, as the relying party redirected to it), fills in and
// submits the provider's login form, and follows the provider's own redirects. It returns the first
// redirect that leaves the provider, the one back to the client's redirect URI, without following
// it. When that redirect carries an OAuth error (error=...), Login returns it with ErrAuthorization.
func (p *Provider) Login(ctx context.Context, client *http.Client, authURL, username, password string) (*url.URL, error) {
	start, err := url.Parse(authURL)
	if err != nil {
		return nil, fmt.Errorf("oidctest: authorization URL: %w", err)
	}
	if !p.owns(start) {
		return nil, fmt.Errorf("%w: %s", ErrNotProvider, start.Redacted())
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	page, back, err := p.walk(ctx, &c, http.MethodGet, start, nil)
	if err != nil || back != nil {
		return outcome(back, err)
	}
	form, err := loginForm(page)
	if err != nil {
		return nil, err
	}
	form.fields.Set("username", username)
	form.fields.Set("password", password)
	page, back, err = p.walk(ctx, &c, http.MethodPost, page.url.ResolveReference(form.action), form.fields)
	if err != nil || back != nil {
		return outcome(back, err)
	}
	return nil, fmt.Errorf("%w: %s", ErrLoginRefused, page.errorText())
}

func outcome(back *url.URL, err error) (*url.URL, error) {
	if err != nil {
		return nil, err
	}
	if e := back.Query().Get("error"); e != "" {
		return back, fmt.Errorf("%w: %s: %s", ErrAuthorization, e, back.Query().Get("error_description"))
	}
	return back, nil
}

func (p *Provider) owns(u *url.URL) bool {
	iss, err := url.Parse(p.Issuer)
	return err == nil && u.Scheme == iss.Scheme && u.Host == iss.Host
}

// page is an HTML page the provider answered with.
type page struct {
	url  *url.URL
	root *html.Node
}

// walk sends one request and follows the provider's redirects: it ends on a page of the provider
// (200), or on the first redirect away from it (returned, not followed).
func (p *Provider) walk(ctx context.Context, c *http.Client, method string, u *url.URL, form url.Values) (*page, *url.URL, error) {
	for range maxHops {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
		if err != nil {
			return nil, nil, fmt.Errorf("oidctest: %w", err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("oidctest: %s %s: %w", method, u.Path, err)
		}
		if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && loc != "" {
			resp.Body.Close()
			next, err := u.Parse(loc)
			if err != nil {
				return nil, nil, fmt.Errorf("oidctest: redirect: %w", err)
			}
			if !p.owns(next) {
				return nil, next, nil
			}
			method, u, form = http.MethodGet, next, nil
			continue
		}
		root, err := html.Parse(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("oidctest: %s %s: %w", method, u.Path, err)
		}
		pg := &page{url: u, root: root}
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("oidctest: %s %s: %s: %s", method, u.Path, resp.Status, pg.text())
		}
		return pg, nil, nil
	}
	return nil, nil, fmt.Errorf("oidctest: more than %d redirects on the provider", maxHops)
}
