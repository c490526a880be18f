package main

import (
	"fmt"
	"strconv"
	"strings"
)

// The job tokens' claims: the cells sign them, edge verifies them.
const (
	jwtKid      = "k1"
	jwtIssuer   = "https://gitlab.example.com"
	jwtAudience = "gitlab-authz-token"
)

// cellIDBase is the first job id of cell N: N * cellIDBase. The cells' id_ranges in edge's config
// say the same, so a job call is routed by its id when its job token is not (it is: a verified
// JWT naming the cell comes first).
const cellIDBase = 1_000_000

// edgeSpec is what one edge's config names.
type edgeSpec struct {
	public, ops, internal string
	cells                 [3]string // the cells' listeners, cell 1 (legacy) first
	redis                 string
	jwtPub                string // the job tokens' public key (PEM)
	agentKey, apiKey      string // HS256 secrets: agent tokens, the API for GitLab
	internalKey           string // the edges' shared secret
}

// edgeConfig is one edge's config: public, ops and internal listeners; the three cells with
// active health checks (a top-level block, and a cell of its own for cell 3); job JWTs verified;
// the shared registry in Redis with a short TTL, so entries of a killed edge expire during the
// soak; agents and the API for GitLab; info logs without the access log.
func edgeConfig(e edgeSpec) string {
	var b strings.Builder
	q := strconv.Quote
	fmt.Fprintf(&b, "listen: {public: %s, ops: %s, internal: %s, advertise_internal: %s}\n",
		q(e.public), q(e.ops), q(e.internal), q("http://"+e.internal))
	b.WriteString("cells:\n")
	for i, addr := range e.cells {
		id := i + 1
		extra := ""
		switch id {
		case 1:
			extra = ", legacy: true"
		case 3:
			extra = ", health: {interval: 2s, timeout: 1s}"
		}
		fmt.Fprintf(&b, "  - {id: %d, url: %s, id_ranges: [\"%d-%d\"]%s}\n", id, q("http://"+addr), id*cellIDBase, (id+1)*cellIDBase-1, extra)
	}
	fmt.Fprintf(&b, `health: {path: /-/readiness, interval: 1s, timeout: 500ms, healthy_after: 1, unhealthy_after: 2}
tokens:
  job_jwt: {verify: true, keys: [{kid: %s, alg: RS256, file: %s}], issuer: %s, audience: %s}
registry: {redis: {addr: %s, key_prefix: chaossoak}, ttl: 30s}
internal: {secret_file: %s}
agents: {keys: [{alg: HS256, file: %s}], wait: 15s}
gitlab_api: {secret_file: %s}
shutdown: {grace: 5s}
log: {level: info, format: json, access: false}
`, q(jwtKid), q(e.jwtPub), q(jwtIssuer), q(jwtAudience), q(e.redis), q(e.internalKey), q(e.agentKey), q(e.apiKey))
	return b.String()
}
