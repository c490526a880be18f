package main

import (
	"fmt"
	"slices"
	"strings"

	"gitlab.com/edge/edge/bench"
)

const (
	caseDirect  = bench.CaseDirect
	caseNginx   = bench.CaseNginx
	caseHAProxy = bench.CaseHAProxy
	caseCaddy   = bench.CaseCaddy
	casePlain   = bench.CasePlain // the plain httputil proxy (bench/cmd/plainproxy)
	caseFloor   = bench.CaseFloor // the Go floor: a proxy without net/http (bench/cmd/floorproxy)
	caseEdgeA   = bench.CaseEdgeA
	caseEdgeB   = bench.CaseEdgeB
	caseEdgeC   = bench.CaseEdgeC
	caseEdgeD   = bench.CaseEdgeD

	casePlainPost = bench.CasePlainPost // a 512 B POST on the legacy route through the plain httputil proxy
	caseEdgePost  = bench.CaseEdgePost  // the same through edge
	caseNginxPost = bench.CaseNginxPost // the same through nginx

	caseNginx1K     = bench.CaseNginx1K     // GET of a 1 KiB answer through nginx
	caseEdge1K      = bench.CaseEdge1K      // the same through edge (legacy route)
	caseEdgeNetHTTP = bench.CaseEdgeNetHTTP // edge-a's request through an edge on net/http's server

	caseTunnel    = bench.CaseTunnel    // through an agent's tunnel, one edge
	caseTunnelHop = bench.CaseTunnelHop // entering a second edge, which forwards to the first
	caseTransfer  = "transfer"          // 10 MiB downloads and uploads: direct, tunnel, hop
)

// Which server a case sends its load to.
const (
	targetDirect  = "direct"
	targetNginx   = "nginx"
	targetHAProxy = "haproxy"
	targetCaddy   = "caddy"
	targetPlain   = "plain" // bench/cmd/plainproxy
	targetFloor   = "floor" // bench/cmd/floorproxy
	targetEdge    = "edge"
	targetEdge2   = "edge2" // the second edge, which holds no agent
	// targetEdgeNetHTTP is an edge like the first, serving its public listener with net/http's
	// server instead of edge's own HTTP/1.1 engine.
	targetEdgeNetHTTP = "edge-nethttp"
)

// agentID is the one agent of the tunnel cases.
const agentID = "a1"

func allCaseIDs() []string {
	return []string{
		caseDirect, caseNginx, caseHAProxy, caseCaddy, casePlain, caseFloor, caseEdgeA, caseEdgeNetHTTP, caseEdgeB, caseEdgeC, caseEdgeD,
		caseNginx1K, caseEdge1K, caseNginxPost, casePlainPost, caseEdgePost, caseTunnel, caseTunnelHop, caseTransfer,
	}
}

// baselines are the cases a case is compared with, run with it even when not selected: the
// tunnel against the plain proxy (edge-a), the hop against the one-edge tunnel, edge's POST
// against nginx's and the plain httputil proxy's, edge's 1 KiB GET against nginx's, and edge
// on its own engine (edge-a) beside edge on net/http's server.
func baselines(id string) []string {
	switch id {
	case caseEdgePost:
		return []string{caseNginxPost, casePlainPost}
	case caseEdge1K:
		return []string{caseNginx1K}
	case caseEdgeNetHTTP:
		return []string{caseEdgeA}
	case caseTunnel:
		return []string{caseEdgeA}
	case caseTunnelHop:
		return []string{caseTunnel}
	}
	return nil
}

// withBaselines adds the baselines of the selected cases that are missing, each just before the
// first case that needs it, and says which it added.
func withBaselines(ids []string) (all, added []string) {
	var add func(id string, selected bool)
	add = func(id string, selected bool) {
		if slices.Contains(all, id) {
			return
		}
		for _, b := range baselines(id) {
			if !slices.Contains(ids, b) {
				add(b, false)
			}
		}
		all = append(all, id)
		if !selected {
			added = append(added, id)
		}
	}
	for _, id := range ids {
		add(id, true)
	}
	return all, added
}

// benchCase is one line of the table: a request and the server it goes to.
type benchCase struct {
	id, label    string
	target       string
	method, path string
	headers      map[string]string
	body         string
	wantUpstream int  // index of the upstream listener (cell 1, 2, 3) that must answer
	viaAgent     bool // path goes under /-/api/v1/agents/<agent>/proxy/<upstream port>
}

// caseTokens are the tokens the edge cases send; never printed.
type caseTokens struct {
	runner string // routable, c=2
	jobJWT string // verified RS256, c=3
	api    string // JWT of the API for GitLab (HS256), for the tunnel cases
}

// postPath is the legacy route the POST cases send their 512 B body to: no token, so edge sends it
// to cell 1, whose upstream listener drains the body.
const postPath = "/api/v4/projects/1/issues"

// postBody is the POST cases' body: 512 bytes.
var postBody = strings.Repeat("0123456789abcdef", 32)

// oneKiBPath is what the 1 KiB cases GET: the upstream answers that many bytes, and with no token
// edge sends it to the legacy cell 1.
const oneKiBPath = "/bytes?n=1024"

// buildCases describes every wrk case (transfer is not one). The direct, peer (nginx, HAProxy,
// Caddy, the plain httputil proxy), edge-nethttp and tunnel cases send the legacy edge case's
// request, so they differ only in what is in between; the POST cases send the same POST through
// nginx, the plain httputil proxy and edge; the 1 KiB cases the same GET through nginx and edge.
func buildCases(ids []string, tok caseTokens) []benchCase {
	const discovery = "/api/v4/runners/router/discovery"
	post := map[string]string{"Content-Type": "application/octet-stream"}
	all := map[string]benchCase{
		caseDirect:  {label: "direct upstream (limit)", target: targetDirect, method: "GET", path: discovery, wantUpstream: 0},
		caseNginx:   {label: "nginx proxy", target: targetNginx, method: "GET", path: discovery, wantUpstream: 0},
		caseHAProxy: {label: "haproxy proxy", target: targetHAProxy, method: "GET", path: discovery, wantUpstream: 0},
		caseCaddy:   {label: "caddy proxy", target: targetCaddy, method: "GET", path: discovery, wantUpstream: 0},
		casePlain:   {label: "plain httputil proxy", target: targetPlain, method: "GET", path: discovery, wantUpstream: 0},
		caseFloor:   {label: "Go floor (no net/http)", target: targetFloor, method: "GET", path: discovery, wantUpstream: 0},
		caseEdgeA:   {label: "edge a: no token (legacy)", target: targetEdge, method: "GET", path: discovery, wantUpstream: 0},
		caseEdgeNetHTTP: {
			label: "edge-nethttp: edge a on net/http's server", target: targetEdgeNetHTTP, method: "GET", path: discovery, wantUpstream: 0,
		},
		caseNginx1K: {label: "nginx-1k: GET 1 KiB, nginx", target: targetNginx, method: "GET", path: oneKiBPath, wantUpstream: 0},
		caseEdge1K:  {label: "edge-1k: GET 1 KiB (legacy)", target: targetEdge, method: "GET", path: oneKiBPath, wantUpstream: 0},
		caseEdgeB: {
			label: "edge b: RUNNER-TOKEN header", target: targetEdge, method: "GET", path: discovery,
			headers: map[string]string{"RUNNER-TOKEN": tok.runner}, wantUpstream: 1,
		},
		caseEdgeC: {
			label: "edge c: token in JSON body", target: targetEdge, method: "POST", path: "/api/v4/jobs/request",
			headers: map[string]string{"Content-Type": "application/json"},
			body:    `{"token":"` + tok.runner + `","last_update":"` + strings.Repeat("0", 32) + `"}`, wantUpstream: 1,
		},
		caseEdgeD: {
			label: "edge d: job JWT (verified)", target: targetEdge, method: "GET", path: "/api/v4/jobs/123/artifacts",
			headers: map[string]string{"JOB-TOKEN": tok.jobJWT}, wantUpstream: 2,
		},
		caseNginxPost: {
			label: "nginx-post: POST 512 B, nginx", target: targetNginx, method: "POST", path: postPath,
			headers: post, body: postBody, wantUpstream: 0,
		},
		casePlainPost: {
			label: "plain-post: POST 512 B, httputil", target: targetPlain, method: "POST", path: postPath,
			headers: post, body: postBody, wantUpstream: 0,
		},
		caseEdgePost: {
			label: "edge-post: POST 512 B (legacy)", target: targetEdge, method: "POST", path: postPath,
			headers: post, body: postBody, wantUpstream: 0,
		},
		caseTunnel: {
			label: "tunnel: edge > agent", target: targetEdge, method: "GET", path: discovery,
			headers: apiAuth(tok), viaAgent: true, wantUpstream: 0,
		},
		caseTunnelHop: {
			label: "tunnel-hop: edge2 > edge > agent", target: targetEdge2, method: "GET", path: discovery,
			headers: apiAuth(tok), viaAgent: true, wantUpstream: 0,
		},
	}
	out := make([]benchCase, 0, len(ids))
	for _, id := range ids {
		c, ok := all[id]
		if !ok {
			continue
		}
		c.id = id
		out = append(out, c)
	}
	return out
}

func apiAuth(tok caseTokens) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok.api}
}

// transferCase is the request of one direction of the transfer case over one path (direct,
// nginx, edge-a, tunnel, tunnel-hop): GET /bytes?n=size, or a POST of size bytes the upstream
// drains.
func transferCase(path, direction string, size int64, tok caseTokens) benchCase {
	c := benchCase{id: path, label: transferLabels()[path], target: targetDirect, method: "GET", path: fmt.Sprintf("/bytes?n=%d", size)}
	if direction == bench.Upload {
		c.method, c.path = "POST", "/upload"
	}
	switch path {
	case caseNginx:
		c.target = targetNginx
	case caseEdgeA:
		c.target = targetEdge
	case caseTunnel:
		c.target, c.viaAgent, c.headers = targetEdge, true, apiAuth(tok)
	case caseTunnelHop:
		c.target, c.viaAgent, c.headers = targetEdge2, true, apiAuth(tok)
	}
	return c
}

// transferPaths are the paths the transfer case compares: direct loopback (the tunnel goal's
// baseline), nginx (the baseline of edge's plain proxy, issue 26), edge's plain proxy and the
// tunnels.
func transferPaths() []string {
	return []string{caseDirect, caseNginx, caseEdgeA, caseTunnel, caseTunnelHop}
}

func transferLabels() map[string]string {
	return map[string]string{
		caseDirect: "direct loopback", caseNginx: "nginx", caseEdgeA: "edge-a (plain proxy)", caseTunnel: "tunnel", caseTunnelHop: "tunnel-hop",
	}
}

// What the selected cases need started.
func needsAgent(ids []string) bool {
	return slices.Contains(ids, caseTunnel) || slices.Contains(ids, caseTunnelHop) || slices.Contains(ids, caseTransfer)
}

func needsSecondEdge(ids []string) bool {
	return slices.Contains(ids, caseTunnelHop) || slices.Contains(ids, caseTransfer)
}

// latencyCases are the cases measured again at one connection: the tunnel cases and the paths
// they are compared with, when a tunnel case is selected.
func latencyCases(cases []benchCase) []benchCase {
	var out []benchCase
	tunnel := slices.ContainsFunc(cases, func(c benchCase) bool { return c.viaAgent })
	for _, c := range cases {
		if tunnel && slices.Contains([]string{caseDirect, caseEdgeA, caseTunnel, caseTunnelHop}, c.id) {
			out = append(out, c)
		}
	}
	return out
}

func needsEdge(cases []benchCase) bool {
	return slices.ContainsFunc(cases, func(c benchCase) bool {
		return c.target == targetEdge || c.target == targetEdge2 || c.target == targetEdgeNetHTTP
	})
}

// needsTarget: some case sends its load to target (a peer proxy to start).
func needsTarget(cases []benchCase, target string) bool {
	return slices.ContainsFunc(cases, func(c benchCase) bool { return c.target == target })
}

// needsPeer: some wrk case sends its load to target, or the selected transfer case moves its
// bytes through it (nginx).
func needsPeer(ids []string, cases []benchCase, target string) bool {
	if needsTarget(cases, target) {
		return true
	}
	return slices.Contains(ids, caseTransfer) && slices.ContainsFunc(transferPaths(), func(path string) bool {
		return transferCase(path, bench.Download, 0, caseTokens{}).target == target
	})
}

func caseLabels(cases []benchCase) map[string]string {
	m := map[string]string{}
	for _, c := range cases {
		m[c.id] = c.label
	}
	return m
}
