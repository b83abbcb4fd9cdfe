package broker

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

// ConnStats is a snapshot of the connection layer, for operators and tests.
type ConnStats struct {
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

// connCounters are the atomics behind ConnStats.
type connCounters struct {
	refused atomic.Int64
	reading atomic.Int64
}

// ConnStats reports the connection layer's state.
func (b *Broker) ConnStats() ConnStats {
	b.mu.Lock()
	open := len(b.conns)
	b.mu.Unlock()
	return ConnStats{
		Open:               open,
		Refused:            b.counters.refused.Load(),
		ReadingRequests:    b.counters.reading.Load(),
		QueuedRequestBytes: b.budget.InUse(),
	}
}

// admitLocked registers c unless a connection cap is reached; it returns
// the name of the setting that refused it, or "". b.mu must be held.
func (b *Broker) admitLocked(c *conn) string {
	maxConns, perIP := b.connLimits()
	if len(b.conns) >= maxConns {
		return "max.connections"
	}
	if b.perIP[c.ip] >= perIP {
		return "max.connections.per.ip"
	}
	b.conns[c] = struct{}{}
	b.perIP[c.ip]++
	b.attachIPBudgetLocked(c)
	return ""
}

// forgetLocked unregisters c. b.mu must be held.
func (b *Broker) forgetLocked(c *conn) {
	delete(b.conns, c)
	b.detachIPBudgetLocked(c)
	if b.perIP[c.ip]--; b.perIP[c.ip] <= 0 {
		delete(b.perIP, c.ip)
	}
}

// logRefusal logs a refused connection at most once per refusalLogEvery,
// with the number refused since the last line.
func (b *Broker) logRefusal(remote net.Addr, setting string) {
	n := b.counters.refused.Add(1)
	now := time.Now().UnixNano()
	last := b.lastRefusalLog.Load()
	if now-last < int64(refusalLogEvery) || !b.lastRefusalLog.CompareAndSwap(last, now) {
		return
	}
	maxConns, perIP := b.connLimits()
	b.logger.Warn("refusing connections: limit reached",
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

// errListenerClosed tells a listener closed under the broker (not by Close)
// from a transient accept failure.
func errListenerClosed(err error) bool { return errors.Is(err, net.ErrClosed) }
