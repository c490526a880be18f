package sshproxy

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// session is one user's connection and edge's connection to the workspace's sshd, bridged.
type session struct {
	s        *Server
	client   *ssh.ServerConn
	upstream ssh.Conn
	uchans   <-chan ssh.NewChannel
	ureqs    <-chan *ssh.Request
	login    pendingLogin
	once     sync.Once
	closed   chan struct{}
	mu       sync.Mutex
	channels []ssh.Channel // the client's open channels, told why when edge closes the session
	// endedBy and endErr say who ended the session and how, for its log line: "user" or
	// "workspace" (that side's connection ended), "revoked", "shutdown" or "panic".
	endedBy string
	endErr  error
}

// run bridges until either side closes, re-checking the authorization every recheck interval.
// A panic in a goroutine of the session ends the session (ssh_session); one in a channel's ends
// that channel (ssh_channel).
func (ss *session) run(chans <-chan ssh.NewChannel, reqs <-chan *ssh.Request) {
	g := ss.s.o.Guard
	var wg sync.WaitGroup
	wg.Go(func() { defer g.Recover("ssh_session", ss.crashed); ss.globalRequests(reqs, ss.upstream) })
	wg.Go(func() { defer g.Recover("ssh_session", ss.crashed); ss.globalRequests(ss.ureqs, ss.client) })
	wg.Go(func() {
		defer g.Recover("ssh_session", ss.crashed)
		for nc := range chans {
			go func() { defer g.Recover("ssh_channel", refuse(nc)); ss.openUpstream(nc) }()
		}
	})
	wg.Go(func() {
		defer g.Recover("ssh_session", ss.crashed)
		for nc := range ss.uchans {
			go func() { defer g.Recover("ssh_channel", refuse(nc)); ss.openClient(nc) }()
		}
	})
	go func() { defer g.Recover("ssh_session", ss.crashed); ss.recheck() }()
	go func() {
		defer g.Recover("ssh_session", ss.crashed)
		// Either side gone: both go.
		type end struct {
			by  string
			err error
		}
		ends := make(chan end, 2)
		go func() { ends <- end{"user", ss.client.Wait()} }()        // guard: only waits for the connection's end
		go func() { ends <- end{"workspace", ss.upstream.Wait()} }() // guard: only waits for the connection's end
		first := <-ends
		ss.close(first.by, "", first.err)
	}()
	wg.Wait()
	<-ss.closed
}

// close ends both connections; by (and err) say who ended the session, and a reason goes to the
// user's open sessions first. Deferred, the closes happen even when telling the reason panics
// (once.Do would not run it again).
func (ss *session) close(by, reason string, err error) {
	ss.once.Do(func() {
		ss.endedBy, ss.endErr = by, err
		defer close(ss.closed)
		defer ss.upstream.Close()
		defer ss.client.Close()
		if reason != "" {
			ss.mu.Lock()
			defer ss.mu.Unlock()
			for _, ch := range ss.channels {
				ch.Stderr().Write([]byte("\r\nedge: " + reason + "\r\n"))
			}
		}
	})
}

// crashed ends the session after a panic in one of its goroutines (the guard's cleanup).
func (ss *session) crashed(bool) { ss.close("panic", "edge failed serving this session", nil) }

// refuse is the guard's cleanup of a channel being opened: refused, unless it was accepted
// already (then Reject does nothing and the bridge's deferred closes end it).
func refuse(nc ssh.NewChannel) func(bool) {
	return func(bool) { nc.Reject(ssh.ConnectionFailed, "edge failed opening the channel") }
}

// recheck asks the authorizer again every interval; a denial (or no answer) closes the session.
func (ss *session) recheck() {
	tick := time.NewTicker(ss.s.o.Recheck)
	defer tick.Stop()
	for {
		select {
		case <-ss.closed:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err := ss.s.o.Authorize(ctx, ss.login.token, ss.client.User())
		cancel()
		if err == nil {
			continue
		}
		ss.s.m.revoked.Inc()
		ss.s.log.Info("ssh access revoked; closing the session", "workspace", ss.client.User(), "user", ss.login.target.User,
			"denied", errors.Is(err, ErrDenied) || errors.Is(err, ErrNotFound))
		ss.close("revoked", "access to this workspace was revoked", err)
		return
	}
}

// globalRequests passes one side's global requests (keepalives) to the other; remote forwarding
// only when allowed.
func (ss *session) globalRequests(in <-chan *ssh.Request, to ssh.Conn) {
	for r := range in {
		if (r.Type == "tcpip-forward" || r.Type == "cancel-tcpip-forward") && !ss.s.o.RemoteForwarding {
			r.Reply(false, nil)
			continue
		}
		ok, payload, err := to.SendRequest(r.Type, r.WantReply, r.Payload)
		if r.WantReply {
			if err != nil {
				ok = false
			}
			r.Reply(ok, payload)
		}
	}
}

// openUpstream opens the channel a user asked for on the workspace's sshd: sessions and local
// forwarding (direct-tcpip); anything else is refused.
func (ss *session) openUpstream(nc ssh.NewChannel) {
	switch nc.ChannelType() {
	case "session", "direct-tcpip":
	default:
		nc.Reject(ssh.Prohibited, "edge does not pass "+nc.ChannelType()+" channels")
		return
	}
	uch, ureqs, err := ss.upstream.OpenChannel(nc.ChannelType(), nc.ExtraData())
	if err != nil {
		var oc *ssh.OpenChannelError
		if errors.As(err, &oc) {
			nc.Reject(oc.Reason, oc.Message)
		} else {
			nc.Reject(ssh.ConnectionFailed, "the workspace refused the channel")
		}
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		uch.Close()
		return
	}
	if nc.ChannelType() == "session" {
		ss.mu.Lock()
		ss.channels = append(ss.channels, ch)
		ss.mu.Unlock()
	}
	ss.bridge(ch, reqs, uch, ureqs)
}

// openClient passes a channel the workspace's sshd opens to the user: forwarded connections of
// remote forwarding and agent forwarding, only when allowed.
func (ss *session) openClient(nc ssh.NewChannel) {
	allowed := (nc.ChannelType() == "forwarded-tcpip" && ss.s.o.RemoteForwarding) ||
		(nc.ChannelType() == "auth-agent@openssh.com" && ss.s.o.AgentForwarding)
	if !allowed {
		nc.Reject(ssh.Prohibited, "not allowed")
		return
	}
	ch, reqs, err := ss.client.OpenChannel(nc.ChannelType(), nc.ExtraData())
	if err != nil {
		nc.Reject(ssh.ConnectionFailed, "the user refused the channel")
		return
	}
	uch, ureqs, err := nc.Accept()
	if err != nil {
		ch.Close()
		return
	}
	ss.bridge(uch, ureqs, ch, reqs)
}

// bridge copies a channel's data (and stderr) both ways with the channels' own flow control,
// passes its requests both ways (pty-req, env, shell, exec, subsystem, window-change, signal,
// exit-status, exit-signal, ...), and closes each side when the other is done.
func (ss *session) bridge(a ssh.Channel, areqs <-chan *ssh.Request, b ssh.Channel, breqs <-chan *ssh.Request) {
	// A panic in any of the channel's goroutines closes both sides, so the others end too;
	// closing a channel twice does nothing.
	g := ss.s.o.Guard
	closeBoth := func() {
		a.Close()
		b.Close()
	}
	crashed := func(bool) { closeBoth() }
	defer closeBoth()
	var wg sync.WaitGroup
	copyHalf := func(dst, src ssh.Channel, dir string) {
		n, _ := io.Copy(dst, src)
		ss.s.m.bytes.WithLabelValues(dir).Add(float64(n))
		dst.CloseWrite()
	}
	wg.Go(func() { defer g.Recover("ssh_channel", crashed); copyHalf(b, a, "to_workspace") })
	wg.Go(func() { defer g.Recover("ssh_channel", crashed); copyHalf(a, b, "to_user") })
	wg.Go(func() {
		defer g.Recover("ssh_channel", crashed)
		n, _ := io.Copy(a.Stderr(), b.Stderr())
		ss.s.m.bytes.WithLabelValues("to_user").Add(float64(n))
	})
	forward := func(in <-chan *ssh.Request, to ssh.Channel) {
		for r := range in {
			if r.Type == "auth-agent-req@openssh.com" && !ss.s.o.AgentForwarding {
				if r.WantReply {
					r.Reply(false, nil)
				}
				continue
			}
			ok, err := to.SendRequest(r.Type, r.WantReply, r.Payload)
			if r.WantReply {
				r.Reply(ok && err == nil, nil)
			}
		}
	}
	reqsDone := make(chan struct{})
	// The user's side gone for good: the workspace's side goes too.
	go func() {
		defer g.Recover("ssh_channel", crashed)
		defer close(reqsDone)
		forward(areqs, b)
		b.Close()
	}()
	// The workspace's requests (exit-status, exit-signal) must reach the user before the user's
	// channel closes: the channel is closed only once they have been passed on.
	forward(breqs, a)
	wg.Wait()
	a.Close()
	b.Close()
	<-reqsDone
}
