package netserver

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// Accept errors such as EMFILE (too many open files) are transient: the
// process runs out of descriptors while connections are open and recovers
// when they close. The broker retries with a backoff, as net/http does,
// instead of exiting.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// acceptBackoff returns the next wait after a failed Accept.
func acceptBackoff(delay time.Duration) time.Duration {
	return min(max(2*delay, minAcceptDelay), maxAcceptDelay)
}

// refusalLogEvery bounds how often refused connections are logged: a client
// reconnecting in a loop must not turn the cap into a log flood.
const refusalLogEvery = 10 * time.Second

// Stats is a snapshot of the connection layer, for operators and tests.
type Stats struct {
	// Open is the number of connections being served.
	Open int
	// Refused counts connections closed at once because a cap was reached.
	Refused int64
	// ReadingRequests is the number of connections that have received a
	// request's size and are waiting for budget or for its body.
	ReadingRequests int64
	// QueuedRequestBytes is the part of the queued.max.request.bytes budget
	// held by requests in flight.
	QueuedRequestBytes int64
}

// connCounters are the atomics behind Stats.
type connCounters struct {
	refused atomic.Int64
	reading atomic.Int64
}

// Stats reports the connection layer's state.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	open := len(s.conns)
	s.mu.Unlock()
	return Stats{
		Open:               open,
		Refused:            s.counters.refused.Load(),
		ReadingRequests:    s.counters.reading.Load(),
		QueuedRequestBytes: s.budget.InUse(),
	}
}

// admitLocked registers c unless a connection cap is reached; it returns
// the name of the setting that refused it, or "". s.mu must be held.
func (s *Server) admitLocked(c *Conn) string {
	maxConns, perIP := s.cfg.Limits()
	if len(s.conns) >= maxConns {
		return "max.connections"
	}
	if s.perIP[c.ip] >= perIP {
		return "max.connections.per.ip"
	}
	s.conns[c] = struct{}{}
	s.perIP[c.ip]++
	s.attachIPBudgetLocked(c)
	return ""
}

// forgetLocked unregisters c. s.mu must be held.
func (s *Server) forgetLocked(c *Conn) {
	delete(s.conns, c)
	s.detachIPBudgetLocked(c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
}

// logRefusal logs a refused connection at most once per refusalLogEvery,
// with the number refused since the last line.
func (s *Server) logRefusal(remote net.Addr, setting string) {
	n := s.counters.refused.Add(1)
	now := time.Now().UnixNano()
	last := s.lastRefusalLog.Load()
	if now-last < int64(refusalLogEvery) || !s.lastRefusalLog.CompareAndSwap(last, now) {
		return
	}
	maxConns, perIP := s.cfg.Limits()
	s.cfg.Logger.Warn("refusing connections: limit reached",
		"setting", setting, "remote", remote.String(), "refused_total", n,
		"max_connections", maxConns, "max_connections_per_ip", perIP)
}

// remoteIP is the key of the per-IP cap: the address without its port.
func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// errListenerClosed tells a listener closed under the server (not by Close)
// from a transient accept failure.
func errListenerClosed(err error) bool { return errors.Is(err, net.ErrClosed) }
