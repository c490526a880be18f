package oidctest

import "errors"

var (
	// ErrNotProvider: Login was given a URL that is not on the provider.
	ErrNotProvider = errors.New("oidctest: not a URL of the provider")
	// ErrNoLoginForm: the provider answered with a page that has no login form (an error page, say).
	ErrNoLoginForm = errors.New("oidctest: no login form")
	// ErrLoginRefused: the provider showed its login form again, with the error it gives.
	ErrLoginRefused = errors.New("oidctest: login refused")
	// ErrAuthorization: the provider sent the browser back to the client with an error parameter.
	ErrAuthorization = errors.New("oidctest: authorization error")
)
