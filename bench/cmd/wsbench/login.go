package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"

	"gitlab.com/edge/edge/internal/testkit/oidctest"
	"gitlab.com/edge/edge/internal/testkit/testnet"
)

// login runs the browser's login with a Go client and returns the workspace's session cookie.
func login(ctx context.Context, p *oidctest.Provider, start string) (string, error) {
	jar, _ := cookiejar.New(nil)
	c := testnet.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	next := start
	for range 10 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			return "", fmt.Errorf("login: %w", err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		switch {
		case resp.StatusCode == http.StatusOK:
			u, _ := resp.Request.URL.Parse("/")
			for _, ck := range jar.Cookies(u) {
				if ck.Name == "edge_session" {
					return ck.Name + "=" + ck.Value, nil
				}
			}
			return "", errors.New("logged in without a session cookie")
		case resp.StatusCode != http.StatusFound:
			return "", fmt.Errorf("login: %d at %s", resp.StatusCode, next)
		case strings.HasPrefix(loc, p.Issuer):
			back, err := p.Login(ctx, c, loc, "bench", "bench")
			if err != nil {
				return "", err
			}
			next = back.String()
		default:
			u, _ := resp.Request.URL.Parse(loc)
			next = u.String()
		}
	}
	return "", errors.New("login did not end")
}
