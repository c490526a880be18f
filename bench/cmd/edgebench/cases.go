package main

import (
	"strings"

	"gitlab.com/edge/edge/bench"
)

const (
	caseDirect = bench.CaseDirect
	caseNginx  = bench.CaseNginx
	caseEdgeA  = "edge-a"
	caseEdgeB  = "edge-b"
	caseEdgeC  = "edge-c"
	caseEdgeD  = "edge-d"
)

// Which server a case sends its load to.
const (
	targetDirect = "direct"
	targetNginx  = "nginx"
	targetEdge   = "edge"
)

func allCaseIDs() []string {
	return []string{caseDirect, caseNginx, caseEdgeA, caseEdgeB, caseEdgeC, caseEdgeD}
}

// benchCase is one line of the table: a request and the server it goes to.
type benchCase struct {
	id, label    string
	target       string
	method, path string
	headers      map[string]string
	body         string
	wantUpstream int // index of the upstream listener (cell 1, 2, 3) that must answer
}

// caseTokens are the tokens the edge cases send; never printed.
type caseTokens struct {
	runner string // routable, c=2
	jobJWT string // verified RS256, c=3
}

// buildCases describes every case. The direct and nginx cases send the legacy edge case's
// request, so the three baselines differ only in what is in between.
func buildCases(ids []string, tok caseTokens) []benchCase {
	const discovery = "/api/v4/runners/router/discovery"
	all := map[string]benchCase{
		caseDirect: {label: "direct upstream (limit)", target: targetDirect, method: "GET", path: discovery, wantUpstream: 0},
		caseNginx:  {label: "nginx proxy", target: targetNginx, method: "GET", path: discovery, wantUpstream: 0},
		caseEdgeA:  {label: "edge a: no token (legacy)", target: targetEdge, method: "GET", path: discovery, wantUpstream: 0},
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
	}
	out := make([]benchCase, 0, len(ids))
	for _, id := range ids {
		c := all[id]
		c.id = id
		out = append(out, c)
	}
	return out
}

func needsEdge(cases []benchCase) bool {
	for _, c := range cases {
		if c.target == targetEdge {
			return true
		}
	}
	return false
}

func needsNginx(cases []benchCase) bool {
	for _, c := range cases {
		if c.target == targetNginx {
			return true
		}
	}
	return false
}

func caseLabels(cases []benchCase) map[string]string {
	m := map[string]string{}
	for _, c := range cases {
		m[c.id] = c.label
	}
	return m
}
