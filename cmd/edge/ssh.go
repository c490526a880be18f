package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/ssh"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/sshproxy"
	"gitlab.com/edge/edge/workspaceauth"
)

// buildSSH makes the SSH front of workspaces (listen.ssh): the workspace's authorizer checks the
// token, the agent router dials the workspace's sshd through the tunnel.
func buildSSH(cfg *config.Config, rt *router, log *slog.Logger, reg prometheus.Registerer) (*sshproxy.Server, error) {
	if cfg.Listen.SSH == "" || cfg.Workspaces == nil || cfg.Workspaces.SSH == nil || rt.workspaces == nil {
		return nil, nil
	}
	w := cfg.Workspaces.SSH
	hostKey, err := ssh.ParsePrivateKey(w.HostKey)
	if err != nil {
		return nil, usageError{Err: fmt.Errorf("workspaces.ssh.host_key_file: %w", err)}
	}
	clientKey, err := ssh.ParsePrivateKey(w.ClientKey)
	if err != nil {
		return nil, usageError{Err: fmt.Errorf("workspaces.ssh.client_key_file: %w", err)}
	}
	authz := rt.workspaces.ssh
	return sshproxy.New(sshproxy.Options{
		HostKey: hostKey, ClientKey: clientKey,
		Authorize: func(ctx context.Context, token, workspace string) (sshproxy.Target, error) {
			if !workspaceauth.IsLabel(workspace) {
				return sshproxy.Target{}, sshproxy.ErrNotFound
			}
			d, err := authz.AuthorizeSSH(ctx, token, workspace)
			switch {
			case errors.Is(err, workspaceauth.ErrNotFound):
				return sshproxy.Target{}, sshproxy.ErrNotFound
			case err != nil:
				return sshproxy.Target{}, err
			case !d.Allowed:
				return sshproxy.Target{}, sshproxy.ErrDenied
			}
			key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(d.Target.HostKey))
			if err != nil {
				return sshproxy.Target{}, fmt.Errorf("the authorizer's host key for %s: %w", workspace, err)
			}
			return sshproxy.Target{User: d.User.Username, AgentID: d.AgentID, Port: d.Target.Port,
				UpstreamUser: d.Target.User, HostKey: key}, nil
		},
		Dial: func(ctx context.Context, agentID string, port int) (net.Conn, error) {
			return rt.agents.router.Dial(ctx, agentID, port)
		},
		Recheck:         cfg.Workspaces.Session.Recheck.Duration,
		AgentForwarding: w.AgentForwarding, RemoteForwarding: w.RemoteForwarding,
		Log: log.With("component", "ssh"), Registerer: reg,
	})
}
