package agentrouter

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/tokens"
)

// GitLabAPIPrefix is where the API for GitLab lives on the public listener.
const GitLabAPIPrefix = "/-/api/v1/"

// GitLabAPI serves the API for GitLab under /-/api/v1/: which edges hold an agent, and requests
// proxied to an agent through any edge. Paths are parsed as sent, not by a path-cleaning mux: the
// rest of a proxy path reaches the agent's upstream byte for byte, encoded slashes included.
type GitLabAPI struct {
	agents   *AgentRouter
	verifier GitLabAPIVerifier
	moves    OrgMoves          // nil: organization moves are not served here
	cells    func(uint64) bool // the cells a move may name
}

// NewGitLabAPI serves the API with v's tokens; moves (with the cells a move may name) may be nil.
func NewGitLabAPI(agents *AgentRouter, v GitLabAPIVerifier, moves OrgMoves, cells func(uint64) bool) *GitLabAPI {
	return &GitLabAPI{agents: agents, verifier: v, moves: moves, cells: cells}
}

type apiOp uint8

const (
	opAgentConnections apiOp = iota + 1
	opProjectAgents
	opProxy
	opOrgMoves
	opOrgMove
	opOrgForget
)

func (o apiOp) String() string {
	switch o {
	case opAgentConnections:
		return "agent_connections"
	case opProjectAgents:
		return "project_agents"
	case opProxy:
		return "proxy"
	case opOrgMoves:
		return "org_moves"
	case opOrgMove:
		return "org_move"
	case opOrgForget:
		return "org_forget"
	}
	return "none"
}

// apiCall is one parsed request of the API for GitLab.
type apiCall struct {
	op        apiOp
	org       uint64
	projectID string
	target    AgentTarget
}

func (g *GitLabAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := hop.Bearer(r.Header.Get("Authorization"))
	if !ok {
		hop.Error(w, fmt.Errorf("%w: a GitLab API token is required", hop.ErrUnauthorized))
		return
	}
	if err := g.verifier.Verify(token, time.Now()); err != nil {
		g.agents.o.Log.Info("API for GitLab: token refused", "error", err)
		hop.Error(w, fmt.Errorf("%w: invalid GitLab API token", hop.ErrUnauthorized))
		return
	}
	call, err := parseAPICall(r.Method, r.URL)
	if err != nil {
		var me *methodError
		if errors.As(err, &me) {
			w.Header().Set("Allow", me.allow)
		}
		hop.Error(w, err)
		return
	}
	if rec := hop.RecordOf(w); rec != nil {
		rec.Agent = call.target.AgentID
	}
	switch call.op {
	case opAgentConnections:
		conns, err := g.agents.o.Registry.Lookup(r.Context(), call.target.AgentID)
		g.agents.writeConnections(w, conns, err)
	case opProjectAgents:
		conns, err := g.agents.o.Registry.ByProject(r.Context(), call.projectID)
		g.agents.writeConnections(w, conns, err)
	case opProxy:
		g.agents.Forward(w, r, call.target)
	case opOrgMoves, opOrgMove, opOrgForget:
		g.serveOrg(w, r, call)
	}
}

// parseAPICall reads the escaped path:
//
//	GET agents/{agent_id}/connections
//	GET projects/{project_id}/agents
//	ANY agents/{agent_id}/proxy/{port}/{path...}
//	ANY agents/{agent_id}/connections/{connection_id}/proxy/{port}/{path...}
func parseAPICall(method string, u *url.URL) (apiCall, error) {
	rest, ok := strings.CutPrefix(u.EscapedPath(), GitLabAPIPrefix)
	if !ok {
		return apiCall{}, fmt.Errorf("%w: %s", hop.ErrNotFound, u.EscapedPath())
	}
	kind, rest := cutSegment(rest)
	id, rest := cutSegment(rest)
	switch kind {
	case "projects":
		if rest != "agents" {
			return apiCall{}, fmt.Errorf("%w: no such API path", hop.ErrNotFound)
		}
		if err := checkID("project id", id); err != nil {
			return apiCall{}, err
		}
		return apiCall{op: opProjectAgents, projectID: id}, readOnly(method)
	case "organizations":
		return parseOrgCall(method, id, rest)
	case "agents":
	default:
		return apiCall{}, fmt.Errorf("%w: no such API path", hop.ErrNotFound)
	}
	if err := checkID("agent id", id); err != nil {
		return apiCall{}, err
	}
	call := apiCall{target: AgentTarget{AgentID: id}}
	next, after := cutSegment(rest)
	if next == "connections" && after == "" && !strings.HasSuffix(rest, "/") {
		call.op = opAgentConnections
		return call, readOnly(method)
	}
	if next == "connections" {
		cid, more := cutSegment(after)
		if err := checkID("connection id", cid); err != nil {
			return apiCall{}, err
		}
		call.target.ConnectionID = cid
		next, after = cutSegment(more)
	}
	if next != "proxy" {
		return apiCall{}, fmt.Errorf("%w: no such API path", hop.ErrNotFound)
	}
	port, upstreamPath := cutSegment(after)
	p, err := parsePort(port)
	if err != nil {
		return apiCall{}, err
	}
	raw := "/" + upstreamPath
	decoded, err := url.PathUnescape(raw)
	if err != nil {
		return apiCall{}, fmt.Errorf("%w: the upstream path is not a valid escaped path", hop.ErrBadRequest)
	}
	call.op = opProxy
	call.target.Port, call.target.Path, call.target.RawPath = p, decoded, raw
	return call, nil
}

// cutSegment splits "a/b/c" into "a" and "b/c".
func cutSegment(s string) (seg, rest string) {
	seg, rest, _ = strings.Cut(s, "/")
	return seg, rest
}

func checkID(what, id string) error {
	if !tokens.ValidID(id) || id == "." || id == ".." {
		return fmt.Errorf("%w: %s %q is not 1 to 64 characters of [A-Za-z0-9._-]", hop.ErrBadRequest, what, id)
	}
	return nil
}

func readOnly(method string) error {
	if method != http.MethodGet && method != http.MethodHead {
		return methodNotAllowed(method, "GET, HEAD")
	}
	return nil
}
