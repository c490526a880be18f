package workspaceauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// DefaultSSHPort is the workspace sshd's port when the authorizer names none.
const DefaultSSHPort = 60022

// SSHDecision is an authorizer's answer for one personal access token and workspace.
type SSHDecision struct {
	Allowed bool
	User    User      // who the token belongs to
	AgentID string    // the agent that serves the workspace
	Target  SSHTarget // the workspace's sshd; its HostKey is in authorized_keys form
}

// SSHAuthorizer checks a personal access token (the SSH password) for a workspace. An error means
// no usable answer: the caller denies (fail closed) and caches nothing. A wrong token, or a user
// without access, is a denial with a nil error; an unknown workspace wraps ErrNotFound. The token
// is in no error.
type SSHAuthorizer interface {
	AuthorizeSSH(ctx context.Context, token, workspace string) (SSHDecision, error)
}

// AuthorizeSSH finds the token's user by its SHA-256, then allows a user listed for the workspace
// when the workspace has an ssh entry. An unknown token is a denial whatever the workspace, so
// that without a token nothing is learnt of which workspaces exist.
func (s *Static) AuthorizeSSH(_ context.Context, token, workspace string) (SSHDecision, error) {
	if token == "" {
		return SSHDecision{}, nil
	}
	// Tokens are only ever compared by their hash, as a map key: the time a lookup takes says
	// nothing useful of the token.
	sum := sha256.Sum256([]byte(token))
	t := s.table.Load() // one table for the whole answer, even across a reload
	name, ok := t.tokens[hex.EncodeToString(sum[:])]
	if !ok {
		return SSHDecision{}, nil
	}
	e, ok := t.workspaces[workspace]
	if !ok {
		return SSHDecision{}, fmt.Errorf("%w: %q", ErrNotFound, workspace)
	}
	if !slices.Contains(e.users, name) || e.ssh == nil {
		return SSHDecision{}, nil
	}
	return SSHDecision{
		Allowed: true,
		User:    User{ID: name, Username: name}, // the file knows users by one name only
		AgentID: e.agentID,
		Target:  *e.ssh,
	}, nil
}

type sshAuthzRequest struct {
	Token     string `json:"personal_access_token"`
	Workspace string `json:"workspace"`
	SSH       bool   `json:"ssh"`
}

type sshAuthzAnswer struct {
	Allowed *bool           `json:"allowed"`
	User    User            `json:"user"`
	AgentID string          `json:"agent_id"`
	SSH     *sshAuthzTarget `json:"ssh"`
}

type sshAuthzTarget struct {
	Port    int    `json:"port"`
	User    string `json:"user"`
	HostKey string `json:"host_key"`
}

// AuthorizeSSH POSTs the question with the token. 200 with "allowed": true, a valid agent_id, a
// user.id and an ssh entry with a host_key allows; 200 with "allowed": false, and 403, deny; 404
// is ErrNotFound; anything else, including a timeout, is ErrUnavailable. An empty token, or a
// workspace name that is no DNS label, is answered without asking.
func (h *HTTPAuthorizer) AuthorizeSSH(ctx context.Context, token, workspace string) (SSHDecision, error) {
	d, err := h.authorizeSSH(ctx, token, workspace)
	return d, withoutToken(err, token)
}

func (h *HTTPAuthorizer) authorizeSSH(ctx context.Context, token, workspace string) (SSHDecision, error) {
	if token == "" {
		return SSHDecision{}, nil
	}
	if !IsLabel(workspace) {
		return SSHDecision{}, fmt.Errorf("%w: %q", ErrNotFound, workspace)
	}
	status, answer, err := h.post(ctx, sshAuthzRequest{Token: token, Workspace: workspace, SSH: true})
	if err != nil {
		return SSHDecision{}, err
	}
	switch status {
	case http.StatusOK:
		return decodeSSHAnswer(answer)
	case http.StatusForbidden:
		return SSHDecision{}, nil
	case http.StatusNotFound:
		return SSHDecision{}, fmt.Errorf("%w: %q", ErrNotFound, workspace)
	default:
		return SSHDecision{}, fmt.Errorf("%w: status %d", ErrUnavailable, status)
	}
}

func decodeSSHAnswer(answer []byte) (SSHDecision, error) {
	var a sshAuthzAnswer
	if err := json.Unmarshal(answer, &a); err != nil {
		return SSHDecision{}, fmt.Errorf("%w: the answer is not the JSON expected: %w", ErrUnavailable, err)
	}
	switch {
	case a.Allowed == nil:
		return SSHDecision{}, fmt.Errorf("%w: the answer says nothing of \"allowed\"", ErrUnavailable)
	case !*a.Allowed:
		return SSHDecision{}, nil
	case !isAgentID(a.AgentID):
		return SSHDecision{}, fmt.Errorf("%w: allowed, but agent_id %q is not an agent ID", ErrUnavailable, a.AgentID)
	case a.User.ID == "":
		return SSHDecision{}, fmt.Errorf("%w: allowed, but without user.id", ErrUnavailable)
	case a.SSH == nil || a.SSH.HostKey == "":
		// Never a connection to an sshd whose key nobody vouched for.
		return SSHDecision{}, fmt.Errorf("%w: allowed, but without ssh.host_key", ErrUnavailable)
	}
	target := staticSSH{Port: a.SSH.Port, User: a.SSH.User, HostKey: a.SSH.HostKey}
	if target.Port == 0 {
		target.Port = DefaultSSHPort
	}
	if problems := checkSSH(target); len(problems) > 0 {
		return SSHDecision{}, fmt.Errorf("%w: allowed, but ssh: %s", ErrUnavailable, strings.Join(problems, "; "))
	}
	return SSHDecision{
		Allowed: true,
		User:    a.User,
		AgentID: a.AgentID,
		Target:  SSHTarget{Port: target.Port, User: target.User, HostKey: target.HostKey},
	}, nil
}

// withoutToken keeps the token out of an error even if something quoted it (an answer echoing it
// back, say): such an error is replaced by one that keeps only its kind.
func withoutToken(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	kind := ErrUnavailable
	if errors.Is(err, ErrNotFound) {
		kind = ErrNotFound
	}
	return fmt.Errorf("%w (details withheld: they contained the token)", kind)
}
