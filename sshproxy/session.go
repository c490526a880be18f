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
}

// run bridges until either side closes, re-checking the authorization every recheck interval.
func (ss *session) run(chans <-chan ssh.NewChannel, reqs <-chan *ssh.Request) {
	var wg sync.WaitGroup
	wg.Go(func() { ss.globalRequests(reqs, ss.upstream) })
	wg.Go(func() { ss.globalRequests(ss.ureqs, ss.client) })
	wg.Go(func() {
		for nc := range chans {
			go ss.openUpstream(nc)
		}
	})
	wg.Go(func() {
		for nc := range ss.uchans {
			go ss.openClient(nc)
		}
	})
	go ss.recheck()
	go func() {
		// Either side gone: both go.
		errc := make(chan error, 2)
		go func() { errc <- ss.client.Wait() }()
		go func() { errc <- ss.upstream.Wait() }()
		<-errc
		ss.close("")
	}()
	wg.Wait()
	<-ss.closed
}

// close ends both connections; a reason goes to the user's open sessions first.
func (ss *session) close(reason string) {
	ss.once.Do(func() {
		if reason != "" {
			ss.mu.Lock()
			for _, ch := range ss.channels {
				ch.Stderr().Write([]byte("\r\nedge: " + reason + "\r\n"))
			}
			ss.mu.Unlock()
		}
		ss.client.Close()
		ss.upstream.Close()
		close(ss.closed)
	})
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
		ss.close("access to this workspace was revoked")
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
	var wg sync.WaitGroup
	copyHalf := func(dst, src ssh.Channel, dir string) {
		n, _ := io.Copy(dst, src)
		ss.s.m.bytes.WithLabelValues(dir).Add(float64(n))
		dst.CloseWrite()
	}
	wg.Go(func() { copyHalf(b, a, "to_workspace") })
	wg.Go(func() { copyHalf(a, b, "to_user") })
	wg.Go(func() {
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
	go func() { forward(areqs, b); b.Close(); close(reqsDone) }()
	// The workspace's requests (exit-status, exit-signal) must reach the user before the user's
	// channel closes: the channel is closed only once they have been passed on.
	forward(breqs, a)
	wg.Wait()
	a.Close()
	b.Close()
	<-reqsDone
}
