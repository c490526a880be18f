package workspaceauth

import "context"

// User is who logged in: the OIDC subject and preferred username.
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
}

// Decision is an authorizer's answer for one user and workspace.
type Decision struct {
	Allowed     bool
	AgentID     string // the agent that serves the workspace, when allowed
	WorkspaceID string
}

// Authorizer says whether a user may use a workspace, and which agent serves it. An error means no
// usable answer: the caller denies (fail closed) and caches nothing.
type Authorizer interface {
	Authorize(ctx context.Context, user User, workspace string, port int) (Decision, error)
}

// Directory is what an authorizer can tell without a user: whether a workspace exists and which
// agent serves it. The static authorizer is one; the HTTP authorizer is not.
type Directory interface {
	Lookup(workspace string) (agentID string, ok bool)
}
