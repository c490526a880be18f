package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"reflect"

	"golang.org/x/crypto/ssh"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/sshproxy"
	"gitlab.com/edge/edge/workspaceauth"
)

// newSSH makes the SSH front of workspaces (listen.ssh): the workspace's authorizer checks the
// token, the agent router dials the workspace's sshd through the tunnel. Its keys and listener
// are read at start only.
func newSSH(cfg *config.Config, d deps, ws *workspaces, agents *agents) (module, error) {
	m := module{name: "ssh", settings: []setting{
		{name: "listen.ssh", same: func(a, b *config.Config) bool { return a.Listen.SSH == b.Listen.SSH }},
		{name: "workspaces.ssh", same: func(a, b *config.Config) bool {
			return a.Workspaces == nil || b.Workspaces == nil || reflect.DeepEqual(a.Workspaces.SSH, b.Workspaces.SSH)
		}},
	}}
	if cfg.Listen.SSH == "" || cfg.Workspaces == nil || cfg.Workspaces.SSH == nil || ws.ssh == nil {
		return m, nil
	}
	srv, err := sshServer(cfg, d, ws.ssh, agents)
	if err != nil {
		return module{}, err
	}
	l := &listener{setting: "listen.ssh", addr: cfg.Listen.SSH, phase: phaseTraffic,
		serve: func(ln net.Listener, _ *tls.Config) error { return srv.Serve(ln) }}
	l.shutdown = func(ctx context.Context) {
		l.ln.Close()
		srv.Shutdown(ctx)
	}
	m.listeners = []*listener{l}
	return m, nil
}

func sshServer(cfg *config.Config, d deps, authz workspaceauth.SSHAuthorizer, agents *agents) (*sshproxy.Server, error) {
	w := cfg.Workspaces.SSH
	hostKey, err := ssh.ParsePrivateKey(w.HostKey)
	if err != nil {
		return nil, cli.UsageError{Err: fmt.Errorf("workspaces.ssh.host_key_file: %w", err)}
	}
	clientKey, err := ssh.ParsePrivateKey(w.ClientKey)
	if err != nil {
		return nil, cli.UsageError{Err: fmt.Errorf("workspaces.ssh.client_key_file: %w", err)}
	}
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
			return agents.router.Dial(ctx, agentID, port)
		},
		Recheck:         cfg.Workspaces.Session.Recheck.Duration,
		AgentForwarding: w.AgentForwarding, RemoteForwarding: w.RemoteForwarding,
		Log: d.log.With("component", "ssh"), Registerer: d.reg, Guard: d.guard,
	})
}
