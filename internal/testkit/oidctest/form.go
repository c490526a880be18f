package oidctest

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// form is the provider's login form: where it posts, and the fields it sends as they stand.
type form struct {
	action *url.URL
	fields url.Values
}

// loginForm finds the form with a password field (exampleop's templates/login.html: hidden "id",
// "username", "password", posted to /login/username).
func loginForm(p *page) (*form, error) {
	for n := range p.root.Descendants() {
		if n.Type != html.ElementNode || n.Data != "form" {
			continue
		}
		f := &form{fields: url.Values{}}
		hasPassword := false
		for in := range n.Descendants() {
			if in.Type != html.ElementNode || in.Data != "input" || attr(in, "name") == "" {
				continue
			}
			f.fields.Set(attr(in, "name"), attr(in, "value"))
			hasPassword = hasPassword || attr(in, "type") == "password"
		}
		if !hasPassword {
			continue
		}
		action, err := url.Parse(attr(n, "action"))
		if err != nil {
			return nil, fmt.Errorf("oidctest: login form action: %w", err)
		}
		f.action = action
		return f, nil
	}
	return nil, fmt.Errorf("%w at %s: %s", ErrNoLoginForm, p.url.Path, p.text())
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// errorText is what the login page says went wrong: exampleop renders it in a <p> of the form.
func (p *page) errorText() string {
	for n := range p.root.Descendants() {
		if n.Type == html.ElementNode && n.Data == "p" {
			if s := textOf(n); s != "" {
				return s
			}
		}
	}
	return p.text()
}

// text is the page's visible text, shortened, for error messages.
func (p *page) text() string {
	s := textOf(p.root)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode && (d.Parent == nil || d.Parent.Data != "script" && d.Parent.Data != "style") {
			b.WriteString(d.Data)
			b.WriteByte(' ')
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
