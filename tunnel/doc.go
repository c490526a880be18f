// Package tunnel is both ends of the agent tunnel: agents dial out to the edge, upgrade the HTTP
// connection, and hold one multiplexed session on it; the edge sends HTTP requests (WebSocket
// upgrades and streaming bodies included) down that session to the agent's local upstreams:
// over splice streams, raw TCP connections to an upstream that the agent only copies bytes on,
// or, to an agent that does not offer them, as requests the agent parses and proxies itself.
//
// The edge side is [Server]: an http.Handler for [ConnectPath], a table of connections per agent,
// and per agent (or per connection) an http.RoundTripper for httputil.ReverseProxy. The agent side
// is [Agent]: Run keeps its connections up and serves what arrives on them. [Server.Splice] gives
// a holder edge a splice stream to relay another edge's spliced connection.
//
// # Wire protocol (version 1)
//
//  1. The agent sends GET <edge base URL>/-/agent/connect over HTTP/1.1 with
//     "Authorization: Bearer <agent token>", "Connection: Upgrade", "Upgrade: edge-tunnel" and
//     "Edge-Agent-Info: <JSON AgentInfo>" (version, commit, pod namespace and name: what it says
//     about itself, shown to GitLab; never used for identity, which comes from the verified token;
//     and "features", the optional parts of the protocol it takes: "splice", step 6).
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
//     (keep-alive), each naming the upstream port in its Edge-Port header, which the agent checks
//     against its allow-list (403 port_not_allowed if it is not there, 400 if it is not a port).
//     The agent sends each to the upstream after removing every Edge-* header, Authorization and
//     Forwarded, and answers it. A request with "Connection: Upgrade" and "Upgrade: edge-tcp"
//     switches the stream (101) to the raw bytes of a TCP connection to the upstream (SSH).
//  6. Splice streams, only to an agent whose features name "splice": the stream's one request is
//     "GET / HTTP/1.1" with "Connection: Upgrade", "Upgrade: edge-splice" and Edge-Port. The agent
//     checks the port, dials the upstream, and answers 101 with "Upgrade: edge-splice", or what a
//     request for that port would have got (403 port_not_allowed, 502 upstream_unreachable) and
//     closes the stream; after a 101 it copies bytes both ways until either side closes, and
//     closes both. The edge uses the stream as a keep-alive TCP connection to the upstream and
//     writes the requests itself as the agent's proxy did (without Edge-*, Authorization and
//     Forwarded), so a request is parsed once on its way. The edge keeps idle splice streams per
//     connection and port (ServerOptions.MaxIdleStreams), closes them when the connection drains
//     or closes, and never gives a draining connection a new request. WebSocket upgrades and
//     streamed bodies take splice streams too; an edge-tcp switch stays a plain stream. An agent
//     with AgentOptions.PerRequest (one with tracing: its spans need requests) does not name the
//     feature and answers a splice request 400.
package tunnel
