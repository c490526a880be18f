package aggregate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Member is one member cluster and edge's own credentials there (edge impersonates callers, so
// its own identity needs the impersonate verb).
type Member struct {
	Name               string
	Server             string // https://host:port[/path]
	Token              string // edge's bearer token at this member
	CA                 []byte // PEM; empty: the system roots
	InsecureSkipVerify bool
}

// member is a Member ready to be called.
type member struct {
	Member
	base   *url.URL
	client *http.Client
}

func newMember(m Member) (*member, error) {
	u, err := url.Parse(strings.TrimSuffix(m.Server, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("member %s: server %q is not an http(s) URL", m.Name, m.Server)
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: m.InsecureSkipVerify} //nolint:gosec // per member, by config
	if len(m.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(m.CA) {
			return nil, fmt.Errorf("member %s: the CA holds no certificate", m.Name)
		}
		tlsConfig.RootCAs = pool
	}
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   5 * time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: memberHeaderTimeout,
	}
	return &member{Member: m, base: u, client: &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// memberHeaderTimeout bounds how long a member may take to begin its answer: a kube-apiserver
// answers 504 itself after its --request-timeout (60 s by default), so past that and a margin the
// member is unavailable (503 naming it, or left out with member_down: partial).
const memberHeaderTimeout = 65 * time.Second

// upstreamHeaders are the client's headers a member may see: edge's own credentials and the
// caller's impersonated identity replace the client's Authorization.
var upstreamHeaders = []string{"Accept", "Content-Type", "User-Agent", "Accept-Encoding", "X-Stream-Protocol-Version",
	"Sec-Websocket-Protocol", "Sec-Websocket-Version", "Sec-Websocket-Key", "Sec-Websocket-Extensions", "Connection", "Upgrade", "Audit-Id"}

// newRequest is a request to the member for path and query, as user.
func (m *member) newRequest(ctx context.Context, method, path, rawQuery string, body io.Reader, in http.Header, user User) (*http.Request, error) {
	u := *m.base
	u.Path = m.base.Path + path
	u.RawQuery = rawQuery
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for _, k := range upstreamHeaders {
		if v, ok := in[k]; ok {
			req.Header[k] = v
		}
	}
	if accept := req.Header.Get("Accept"); strings.Contains(accept, "protobuf") && !strings.Contains(accept, "as=Table") {
		// Edge merges JSON: a client that prefers protobuf gets JSON, as it accepts (a server
		// may always answer with another type the client listed, or JSON).
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+m.Token)
	req.Header.Set("Impersonate-User", user.Name)
	for _, g := range user.Groups {
		req.Header.Add("Impersonate-Group", g)
	}
	return req, nil
}

// memberError is a member that could not answer, or answered an error edge passes on.
type memberError struct {
	member string
	code   int    // the member's status; 0 when it could not be reached
	body   []byte // its Status, when it sent one
	err    error
}

func (e *memberError) Error() string {
	if e.code == 0 {
		return fmt.Sprintf("member cluster %s is unavailable: %v", e.member, e.err)
	}
	return fmt.Sprintf("member cluster %s answered %d", e.member, e.code)
}

func (e *memberError) Unwrap() error { return e.err }

// unreachable tells whether the member did not answer at all (down), as opposed to answering an
// error.
func unreachable(err error) bool {
	var me *memberError
	return errors.As(err, &me) && me.code == 0
}
