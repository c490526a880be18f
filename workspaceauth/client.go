package workspaceauth

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// clientOf is the address login values are counted against: the peer, or the last address a
// trusted proxy put in X-Forwarded-For (edge's header policy removes that header from every
// other peer before a request gets here). IPv6 addresses count by their /64, which one host
// usually holds whole.
func clientOf(r *http.Request) string {
	addr := r.RemoteAddr
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		last := xff[len(xff)-1]
		if i := strings.LastIndexByte(last, ','); i >= 0 {
			last = last[i+1:]
		}
		addr = strings.TrimSpace(last)
	} else if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "unknown"
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// logLimiter lets one line through per interval: refusals under a flood are counted in full by
// a metric, and logged only now and then.
type logLimiter struct {
	every time.Duration
	mu    sync.Mutex
	last  time.Time
}

func (l *logLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.last) < l.every {
		return false
	}
	l.last = now
	return true
}
