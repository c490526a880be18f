package workspaceauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	authzDefaultTimeout = 5 * time.Second
	authzMaxAnswer      = 64 << 10 // bytes of an authorizer's answer read at most
	authzJWTLifetime    = 30 * time.Second
)

// HTTPOptions configure the HTTP authorizer.
type HTTPOptions struct {
	URL     string           // POSTed to; http or https
	Secret  []byte           // HS256 key shared with the authorizer; at least 32 bytes
	Timeout time.Duration    // for one call, answer read included; 0: 5 s
	Client  *http.Client     // nil: a client of its own; redirects are never followed either way
	Now     func() time.Time // nil: time.Now
}

// HTTPAuthorizer asks GitLab (or anything speaking workspaces.md's protocol) over HTTP.
type HTTPAuthorizer struct {
	url     string
	secret  []byte
	timeout time.Duration
	client  *http.Client
	now     func() time.Time
}

// NewHTTP checks the options.
func NewHTTP(o HTTPOptions) (*HTTPAuthorizer, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("workspaceauth: authorizer URL %q: want an http or https URL", o.URL)
	}
	if len(o.Secret) < 32 {
		return nil, errors.New("workspaceauth: the authorizer secret must be at least 32 bytes")
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("workspaceauth: authorizer timeout %v is negative", o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = authzDefaultTimeout
	}
	var c http.Client
	if o.Client != nil {
		c = *o.Client
	} else {
		c.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	// A redirect is an answer we do not understand (deny), never a place to send the JWT again.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if o.Now == nil {
		o.Now = time.Now
	}
	return &HTTPAuthorizer{
		url: o.URL, secret: bytes.Clone(o.Secret), timeout: o.Timeout, client: &c, now: o.Now,
	}, nil
}

type authzRequest struct {
	User      User   `json:"user"`
	Workspace string `json:"workspace"`
	Port      int    `json:"port"`
}

type authzAnswer struct {
	Allowed     *bool  `json:"allowed"`
	AgentID     string `json:"agent_id"`
	WorkspaceID string `json:"workspace_id"`
}

// Authorize POSTs the question. 200 with "allowed": true and a valid agent_id allows; 200 with
// "allowed": false, and 403, deny; 404 is ErrNotFound; anything else, including a timeout, is
// ErrUnavailable.
func (h *HTTPAuthorizer) Authorize(ctx context.Context, user User, workspace string, port int) (Decision, error) {
	status, answer, err := h.post(ctx, authzRequest{User: user, Workspace: workspace, Port: port})
	if err != nil {
		return Decision{}, err
	}
	switch status {
	case http.StatusOK:
		return decodeAnswer(answer)
	case http.StatusForbidden:
		return Decision{}, nil
	case http.StatusNotFound:
		return Decision{}, fmt.Errorf("%w: %q", ErrNotFound, workspace)
	default:
		return Decision{}, fmt.Errorf("%w: status %d", ErrUnavailable, status)
	}
}

// post sends question as JSON with the signed JWT, and reads the answer (bounded) whatever its
// status, all within the timeout. An error wraps ErrUnavailable and says nothing of the question.
func (h *HTTPAuthorizer) post(ctx context.Context, question any) (status int, answer []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	body, err := json.Marshal(question)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	token, err := h.token()
	if err != nil {
		return 0, nil, fmt.Errorf("%w: sign the request: %w", ErrUnavailable, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	// Read what there is (bounded) whatever the status, so the connection can be used again.
	answer, err = io.ReadAll(io.LimitReader(resp.Body, authzMaxAnswer+1))
	switch {
	case err != nil:
		return 0, nil, fmt.Errorf("%w: reading the answer: %w", ErrUnavailable, err)
	case len(answer) > authzMaxAnswer:
		return 0, nil, fmt.Errorf("%w: answer longer than %d bytes", ErrUnavailable, authzMaxAnswer)
	}
	return resp.StatusCode, answer, nil
}

func decodeAnswer(answer []byte) (Decision, error) {
	var a authzAnswer
	if err := json.Unmarshal(answer, &a); err != nil {
		return Decision{}, fmt.Errorf("%w: the answer is not the JSON expected: %w", ErrUnavailable, err)
	}
	switch {
	case a.Allowed == nil:
		return Decision{}, fmt.Errorf("%w: the answer says nothing of \"allowed\"", ErrUnavailable)
	case !*a.Allowed:
		return Decision{}, nil
	case !isAgentID(a.AgentID):
		return Decision{}, fmt.Errorf("%w: allowed, but agent_id %q is not an agent ID", ErrUnavailable, a.AgentID)
	}
	return Decision{Allowed: true, AgentID: a.AgentID, WorkspaceID: a.WorkspaceID}, nil
}

// token is the request's bearer JWT: HS256, from edge to gitlab, valid for 30 seconds.
func (h *HTTPAuthorizer) token() (string, error) {
	now := h.now()
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Issuer:    "edge",
		Audience:  jwt.ClaimStrings{"gitlab"},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(authzJWTLifetime)),
	}).SignedString(h.secret)
}
