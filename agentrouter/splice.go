package agentrouter

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/tunnel"
	"gitlab.com/edge/edge/wire"
)

// Edge to edge over a splice. For a plain request (no body, no upgrade) the entry edge does not
// hand the holder a request to proxy again: it opens a connection to the holder's internal
// listener naming the agent and port (HeaderSplicePort), the holder checks the internal JWT,
// opens a splice stream to the agent and answers 101, and from then on copies bytes. The entry
// edge keeps that connection as a keep-alive connection to (holder, agent, connection, port) and
// writes the upstream's requests on it itself, as the agent's proxy wrote them before: one
// request costs one proxy however many edges it crosses.
//
// The splice open carries no Edge-Port, which a holder without splicing refuses (400) before
// anything reaches an agent; that answer, or the holder's 501 for an agent that does not splice,
// sends the request the per-request way, and the entry edge does not ask that holder to splice
// for that agent again for a while. A holder's "not here" (421) comes before any byte of the
// request is sent, so the entry edge tries the next holder.

const (
	// HeaderSplicePort names the agent's port on a splice open to a holder (instead of
	// hop.HeaderPort, so that an edge that does not splice refuses it).
	HeaderSplicePort = "Edge-Splice-Port"
	// HeaderAgentRefused marks a holder's answer to a splice open that is the agent's own
	// refusal (a port it does not serve, an upstream it cannot reach): the client's answer.
	HeaderAgentRefused = "Edge-Agent-Refused"

	// peerSpliceMaxAge bounds how long the entry edge keeps using one spliced connection: it is
	// bound to one agent connection at the holder, and only the entry edge knows when it is idle.
	// A connection that drains at the holder thus stops getting new requests within this age;
	// an older spliced connection is closed when next taken from the idle pool, between requests.
	peerSpliceMaxAge = 5 * time.Second
	// noSpliceFor is how long the entry edge sends an agent's requests the per-request way after
	// its holder said it does not splice for it (an older holder or agent; an agent with tracing).
	noSpliceFor = 30 * time.Second
	// peerSpliceSweep is how often the entry edge closes its idle spliced connections, while it
	// sends requests over them and once after: past peerSpliceMaxAge none would be reused, and
	// each holds a held stream at the holder and an upstream connection at the agent.
	peerSpliceSweep = 30 * time.Second
)

// newPeerSplices is the entry edge's pool of spliced connections to holders. Only requests
// InlineTransport carries inline reach it (spliceable), so its fallback never dials.
func (a *AgentRouter) newPeerSplices() *wire.InlineTransport {
	return wire.NewInlineTransport(&http.Transport{
		Proxy:               nil,
		DialContext:         a.dialHolder,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ReadBufferSize:      32 << 10,
		WriteBufferSize:     32 << 10,
	})
}

// spliceable tells whether r may take a spliced connection to at's holder: a request the inline
// transport carries (no body, no upgrade, no Expect), to a holder that did not say no lately.
func (a *AgentRouter) spliceable(r *http.Request, at *attempt) bool {
	if at.body != nil || r.Header.Get("Upgrade") != "" || r.Header.Get("Expect") != "" {
		return false
	}
	if until, ok := a.noSplice.Get(at.holder + " " + at.target.AgentID); ok {
		if time.Now().Before(until) {
			return false
		}
		a.noSplice.Remove(at.holder + " " + at.target.AgentID)
	}
	return true
}

// spliceUsed notes a request over a spliced connection and makes sure a sweep is coming.
func (a *AgentRouter) spliceUsed() {
	a.spliceTraffic.Store(true)
	if a.sweepArmed.CompareAndSwap(false, true) {
		time.AfterFunc(a.spliceSweep, a.o.Guard.Func("background", a.sweepPeerSplices))
	}
}

// sweepPeerSplices closes the idle spliced connections, and comes again while they are used.
func (a *AgentRouter) sweepPeerSplices() {
	a.peerSplices.CloseIdleConnections()
	if a.spliceTraffic.Swap(false) {
		time.AfterFunc(a.spliceSweep, a.o.Guard.Func("background", a.sweepPeerSplices))
		return
	}
	a.sweepArmed.Store(false)
	if a.spliceTraffic.Load() { // a request came in between: keep sweeping
		a.spliceUsed()
	}
}

// newSplicedProxy is the entry edge's proxy for requests over spliced connections.
func (a *AgentRouter) newSplicedProxy(transport http.RoundTripper, buffers httputil.BufferPool) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:      a.rewriteSpliced,
		Transport:    transport,
		BufferPool:   buffers,
		ErrorHandler: a.errorHandler,
	}
}

// rewriteSpliced makes the request the agent's upstream gets: what the holder and the agent did
// to it on the per-request path, done here (the holder no longer adds the entry edge's address
// to X-Forwarded-For: it does not proxy the request).
func (a *AgentRouter) rewriteSpliced(pr *httputil.ProxyRequest) {
	at := attemptOf(pr.In)
	pr.Out.URL.Scheme, pr.Out.URL.Host = "http", a.spliceKey(at)
	pr.Out.URL.Path, pr.Out.URL.RawPath = at.target.Path, at.target.RawPath
	pr.Out.Host = pr.In.Host
	if pr.Out.Host == "" {
		if u, err := url.Parse(at.holder); err == nil {
			pr.Out.Host = u.Host // what the per-request path sent
		}
	}
	hop.SetForwarded(pr)
	hop.StripEdgeHeaders(pr.Out.Header)
	pr.Out.Header.Del("Authorization")
	pr.Out.Header.Del("Forwarded") // the agent's proxy removes it
}

// spliceKey names the pool of spliced connections a request may take: one per holder, agent,
// connection (or any) and port. Agent and connection ids are [A-Za-z0-9._-], so '~' separates.
func (a *AgentRouter) spliceKey(at *attempt) string {
	conn := at.target.ConnectionID
	if conn == "" {
		conn = "-"
	}
	return at.target.AgentID + "~" + conn + "~" + a.holderName(at.holder) + ":" + strconv.Itoa(at.target.Port)
}

// holderName is a short name for a holder's URL, the same for the life of the router.
func (a *AgentRouter) holderName(holder string) string {
	if v, ok := a.holderNames.Load(holder); ok {
		return v.(string)
	}
	v, _ := a.holderNames.LoadOrStore(holder, "h"+strconv.FormatUint(a.holderSeq.Add(1), 10))
	return v.(string)
}

// spliceRoundTrip sends r over a spliced connection; the agent's refusal is r's answer.
func (a *AgentRouter) spliceRoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.peerSplices.RoundTrip(r)
	var refused *tunnel.RefusedError
	if errors.As(err, &refused) {
		return refused.Response(r), nil
	}
	return resp, err
}

// dialHolder opens a spliced connection to the attempt's holder, for its agent and port: the
// splice open, answered 101 before anything of the request is sent. Errors: errNotHere (421),
// errNoSplice, *tunnel.RefusedError (the agent's answer), a dial error (the holder is gone).
func (a *AgentRouter) dialHolder(ctx context.Context, _, _ string) (net.Conn, error) {
	at, ok := ctx.Value(attemptKey{}).(*attempt)
	if !ok || at.holder == "" {
		return nil, errNoAttempt
	}
	u, err := url.Parse(at.holder)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: holder URL %q", errNoSplice, at.holder)
	}
	token, err := a.o.Minter.Mint(at.target.AgentID, time.Now())
	if err != nil {
		return nil, fmt.Errorf("agentrouter: sign an internal token: %w", err)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	nc, err := a.peerDialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	raw, _ := nc.(syscall.Conn)
	conn := nc
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) }) // guard: only sets a deadline
	defer stop()
	if u.Scheme == "https" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if a.o.PeerTLS != nil {
			cfg = a.o.PeerTLS.Clone()
		}
		cfg.ServerName = u.Hostname()
		cfg.NextProtos = []string{"http/1.1"} // the upgrade needs HTTP/1.1
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("agentrouter: TLS to holder %s: %w", u.Host, err)
		}
		conn = tc
	}
	err = a.spliceOpen(conn, u.Host, token, at.target)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return &peerSpliceConn{Conn: conn, raw: raw, until: time.Now().Add(a.spliceMaxAge)}, nil
}

// spliceOpen asks the holder for the splice and reads its answer.
func (a *AgentRouter) spliceOpen(conn net.Conn, host, token string, t AgentTarget) error {
	var b strings.Builder
	fmt.Fprintf(&b, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nAuthorization: Bearer %s\r\n%s: %s\r\n%s: %d\r\n%s: 1\r\n",
		host, tunnel.SpliceUpgradeToken, token, hop.HeaderAgentID, t.AgentID, HeaderSplicePort, t.Port, hop.HeaderHop)
	if t.ConnectionID != "" {
		fmt.Fprintf(&b, "%s: %s\r\n", hop.HeaderConnectionID, t.ConnectionID)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return fmt.Errorf("agentrouter: splice open to the holder: %w", err)
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("agentrouter: splice open to the holder: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols && strings.EqualFold(resp.Header.Get("Upgrade"), tunnel.SpliceUpgradeToken):
		if br.Buffered() > 0 {
			return errors.New("agentrouter: the holder sent bytes past its 101")
		}
		return nil
	case resp.StatusCode == http.StatusMisdirectedRequest && resp.Header.Get(hop.HeaderNotHere) != "":
		return errNotHere
	case resp.Header.Get(HeaderAgentRefused) != "":
		resp.Header.Del(HeaderAgentRefused)
		return &tunnel.RefusedError{StatusCode: resp.StatusCode, Header: resp.Header, Body: body}
	}
	return fmt.Errorf("%w: it answered %d", errNoSplice, resp.StatusCode)
}

// peerSpliceConn is a spliced connection to a holder. The inline transport asks the socket
// whether an idle connection is still open and quiet before it reuses it (SyscallConn); past
// peerSpliceMaxAge the answer is no, and the connection is closed there, between requests.
type peerSpliceConn struct {
	net.Conn
	raw   syscall.Conn // the TCP socket under TLS too
	until time.Time
}

func (c *peerSpliceConn) SyscallConn() (syscall.RawConn, error) {
	if !time.Now().Before(c.until) || c.raw == nil {
		return nil, errSpliceExpired
	}
	return c.raw.SyscallConn()
}

// serveSplice is the holder's side of a splice open: the routing headers and internal JWT were
// checked (t); it opens a splice stream to the agent and copies bytes between it and the
// connection. "Not here", "no splice" and the agent's refusal are answered before the 101.
func (a *AgentRouter) serveSplice(w http.ResponseWriter, r *http.Request, t AgentTarget) {
	up, err := a.o.Tunnels.Splice(r.Context(), t.AgentID, t.ConnectionID, t.Port)
	var refused *tunnel.RefusedError
	switch {
	case errors.As(err, &refused):
		a.metrics.internal.WithLabelValues("splice_refused").Inc()
		for k, v := range refused.Header {
			if k != "Content-Length" && k != "Connection" && k != "Transfer-Encoding" {
				w.Header()[k] = v
			}
		}
		w.Header().Set(HeaderAgentRefused, "1")
		w.WriteHeader(refused.StatusCode)
		w.Write(refused.Body)
		return
	case errors.Is(err, tunnel.ErrNoSplice):
		a.metrics.internal.WithLabelValues("no_splice").Inc()
		hop.Write(w, http.StatusNotImplemented, "no_splice", "agent "+t.AgentID+" serves each request itself: send requests, not a splice")
		return
	case errors.Is(err, tunnel.ErrAgentNotConnected), errors.Is(err, tunnel.ErrConnectionGone):
		a.notHere(w, t)
		return
	case err != nil:
		a.metrics.internal.WithLabelValues("error").Inc()
		a.fail(w, r, t, err)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		hop.Write(w, http.StatusHTTPVersionNotSupported, "not_upgradable", "a splice needs HTTP/1.1")
		return
	}
	// The server's read and write deadlines for the request must not cut the splice.
	conn.SetDeadline(time.Time{})
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + tunnel.SpliceUpgradeToken + "\r\n\r\n")
	if err := brw.Flush(); err != nil {
		conn.Close()
		up.Close()
		return
	}
	a.metrics.internal.WithLabelValues("spliced").Inc()
	var buffered []byte
	if n := brw.Reader.Buffered(); n > 0 {
		buffered, _ = brw.Reader.Peek(n)
	}
	a.relays.Go(a.o.Guard.Func("splice_relay", func() { tunnel.Relay(conn, up, buffered, a.buffers, a.o.Guard) }))
}

// WaitRelays waits until the splices this edge holds for other edges have ended (their tunnels
// closed), or ctx ends: the stop of what serves them awaits what they started.
func (a *AgentRouter) WaitRelays(ctx context.Context) error {
	done := make(chan struct{})
	go func() { a.relays.Wait(); close(done) }() // guard: only waits
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
