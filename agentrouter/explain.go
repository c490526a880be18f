package agentrouter

import (
	"net/http"
	"strconv"
)

// ExplainAPI says what the API for GitLab would do with a request, for `edge explain`: the rule,
// and the call's fields; an error is the refusal it would answer.
func ExplainAPI(r *http.Request) (string, map[string]any, error) {
	call, err := parseAPICall(r.Method, r.URL)
	if err != nil {
		return "", nil, err
	}
	fields := map[string]any{"api": call.op.String()}
	if call.projectID != "" {
		fields["project_id"] = call.projectID
	}
	if call.target.AgentID != "" {
		fields["agent_id"] = call.target.AgentID
	}
	if call.target.ConnectionID != "" {
		fields["connection_id"] = call.target.ConnectionID
	}
	switch {
	case call.op != opProxy:
		return "registry query (a GitLab API JWT is required)", fields, nil
	case call.target.ConnectionID != "":
		fields["port"], fields["upstream_path"] = strconv.Itoa(call.target.Port), call.target.RawPath
		return "one named connection of the agent: local tunnel, else its holder's internal listener", fields, nil
	}
	fields["port"], fields["upstream_path"] = strconv.Itoa(call.target.Port), call.target.RawPath
	return "any connection of the agent: local tunnel, else a holder from the registry, waiting up to agents.wait", fields, nil
}
