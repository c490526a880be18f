// Package tunnel is both ends of the agent tunnel: agents dial out to the edge, upgrade the HTTP
// connection, and hold one multiplexed session on it; the edge sends HTTP requests (WebSocket
// upgrades and streaming bodies included) down that session, and the agent forwards each to a
// local upstream.
//
// The edge side is [Server]: an http.Handler for [ConnectPath], a table of connections per agent,
// and per agent (or per connection) an http.RoundTripper for httputil.ReverseProxy. The agent side
// is [Agent]: Run keeps its connections up and serves what arrives on them.
//
// # Wire protocol (version 1)
//
//  1. The agent sends GET <edge base URL>/-/agent/connect over HTTP/1.1 with
//     "Authorization: Bearer <agent token>", "Connection: Upgrade", "Upgrade: edge-tunnel" and
//     "Edge-Agent-Info: <JSON AgentInfo>" (version, commit, pod namespace and name: what it says
//     about itself, shown to GitLab; never used for identity, which comes from the verified token).
//  2. The edge verifies the token and answers "101 Switching Protocols" with "Upgrade: edge-tunnel"
//     and "Edge-Connection-Id". Anything else is an error with a JSON body {"error": "..."}: 401 for
//     a bad token, 429 (with Retry-After) when the agent id already holds the edge's maximum of
//     connections (pending ones included), 503 while the edge drains.
//  3. The connection then carries a hashicorp/yamux session: the agent is the yamux client, the edge
//     the server, keep-alive pings both ways.
//  4. The agent opens the first stream, the control stream, at once: this is the handshake. Until
//     the edge has accepted it (within a few seconds of the 101, else it closes the connection) the
//     connection is not registered and is given no request. Newline-delimited JSON messages go both
//     ways on it. The only message so far is {"type":"drain"}. From the agent it means "send no new
//     requests on this connection, close it once the requests in flight are done" (the agent has
//     another connection up, or is stopping). From the edge it means "this edge is draining: connect
//     again (a load balancer sends you elsewhere); this connection is closed once its requests in
//     flight are done". The edge closes the session itself, because only the edge knows when every
//     response it reads has been read. Unknown messages are ignored.
//  5. Every other stream is opened by the edge and carries HTTP/1.1 requests, one after another
//     (keep-alive), each answered by the agent. The agent sends a request to the upstream named by
//     its Edge-Port header, if its allow-list has it (else 403), after removing every Edge-* header
//     and Authorization.
package tunnel
