package netserver

// What a client may hold before it has logged in, and what one address may
// hold at all. Before these bounds, eight connections announcing 64 MiB
// frames filled the broker-wide request budget (512 MiB) and a legitimate
// produce waited 27 s; on a SASL listener the eight did not even need a
// password. Now:
//
//   - on a SASL listener, a frame sent before login may be at most
//     SASLMaxReceiveSize (512 KiB, as Kafka's sasl.server.max.receive.size),
//     and its bytes come from a small budget of their own, so no number of
//     unauthenticated connections touches the budget of logged-in clients;
//     such a connection idle for ConnectionsMaxIdleUnauthenticated (10 s)
//     is closed;
//   - the requests of one address hold at most QueuedMaxRequestBytesPerIP
//     (a quarter of the budget) at once, so one host cannot starve the
//     others, and those of one logged-in principal at most
//     QueuedMaxRequestBytesPerPrincipal (a quarter too), so one account
//     cannot from many hosts either. ANONYMOUS (every client of a listener
//     without authentication) and in-process clients have no share of
//     their own: there the address is all that tells clients apart.

import (
	"time"

	"github.com/tributary-io/tributary/internal/budget"
)

// preAuthBudgetFrames is how many largest pre-login frames the
// unauthenticated budget holds at once.
const preAuthBudgetFrames = 16

// preAuth reports whether c is on a SASL listener and has not logged in.
// Read goroutine only (the SASL handlers run there).
func (c *Conn) preAuth() bool { return !c.authenticated }

// frameSizeAllowed checks a frame's announced size against what the
// connection may send now, logging and refusing a larger one.
func (c *Conn) frameSizeAllowed(size int32) bool {
	if c.preAuth() && size > c.s.cfg.SASLMaxReceiveSize {
		c.logger.Warn("closing connection: request before login larger than allowed",
			"size", size, "max", c.s.cfg.SASLMaxReceiveSize, "setting", "sasl.server.max.receive.size (--sasl-max-receive-size)")
		return false
	}
	return true
}

// idleLimit is how long the connection may send nothing.
func (c *Conn) idleLimit() time.Duration {
	if c.preAuth() {
		return min(c.s.cfg.ConnectionsMaxIdleUnauthenticated, c.s.cfg.ConnectionsMaxIdle)
	}
	return c.s.cfg.ConnectionsMaxIdle
}

// requestHold is a request's share of the budgets, returned once its
// response is written. Before login it is taken from the unauthenticated
// budget alone (pre is set); after, from the address's share and the
// broker-wide budget.
type requestHold struct {
	n         int64
	ip, princ *budget.Budget
	pre       bool
}

// acquireHold waits until size bytes fit every budget the connection
// draws on; ok is false if the connection or the broker went first.
func (c *Conn) acquireHold(size int) (h requestHold, ok bool) {
	if c.preAuth() {
		h = requestHold{n: c.s.preAuthBudget.Clamp(int64(size)), pre: true}
		return h, c.s.preAuthBudget.Acquire(h.n, c.gone, c.stopped)
	}
	h = requestHold{n: c.s.budget.Clamp(int64(size)), ip: c.ipBudget, princ: c.principalBudget()}
	// The shares first: a host or an account over its share waits
	// without holding any of the broker-wide budget.
	if h.ip != nil {
		h.n = h.ip.Clamp(h.n)
	}
	if h.princ != nil {
		h.n = h.princ.Clamp(h.n)
	}
	if h.ip != nil && !h.ip.Acquire(h.n, c.gone, c.stopped) {
		return requestHold{}, false
	}
	if h.princ != nil && !h.princ.Acquire(h.n, c.gone, c.stopped) {
		h.princ = nil
		h.releaseShares(c.s, false)
		return requestHold{}, false
	}
	if !c.s.budget.Acquire(h.n, c.gone, c.stopped) {
		h.releaseShares(c.s, false)
		return requestHold{}, false
	}
	return h, true
}

// release gives the hold back.
func (h requestHold) release(s *Server) { h.releaseShares(s, true) }

// releaseShares gives back the shares, and the broker-wide budget too
// when global (false: acquireHold undoing what it had taken).
func (h requestHold) releaseShares(s *Server, global bool) {
	if h.n == 0 {
		return
	}
	if h.pre {
		s.preAuthBudget.Release(h.n)
		return
	}
	if global {
		s.budget.Release(h.n)
	}
	if h.ip != nil {
		h.ip.Release(h.n)
	}
	if h.princ != nil {
		h.princ.Release(h.n)
	}
}

// principalBudget is the share of the connection's principal, nil for
// ANONYMOUS and in-process clients. A connection's principal never changes
// once logged in (Login), so it is looked up once.
func (c *Conn) principalBudget() *budget.Budget {
	if c.princBudget != nil || c.principal == Anonymous || c.internal {
		return c.princBudget
	}
	v, _ := c.s.principalBudgets.LoadOrStore(c.principal, budget.New(c.s.cfg.QueuedMaxRequestBytesPerPrincipal))
	c.princBudget = v.(*budget.Budget)
	return c.princBudget
}

// ipBudgets are the per-address shares of the request budget, one per
// address with a connection open.
type ipBudgets struct {
	by map[string]*ipBudget
}

type ipBudget struct {
	*budget.Budget
	conns int
}

// attachIPBudgetLocked gives c its address's share. s.mu must be held.
func (s *Server) attachIPBudgetLocked(c *Conn) {
	if s.ipBudgets.by == nil {
		s.ipBudgets.by = map[string]*ipBudget{}
	}
	ib := s.ipBudgets.by[c.ip]
	if ib == nil {
		ib = &ipBudget{Budget: budget.New(s.cfg.QueuedMaxRequestBytesPerIP)}
		s.ipBudgets.by[c.ip] = ib
	}
	ib.conns++
	c.ipBudget = ib.Budget
}

// detachIPBudgetLocked drops c's hold on its address's share. s.mu must be
// held.
func (s *Server) detachIPBudgetLocked(c *Conn) {
	ib := s.ipBudgets.by[c.ip]
	if ib == nil || c.ipBudget == nil {
		return
	}
	// The share stays while requests of c are unwritten: they release
	// into c.ipBudget, which a new connection may then share or not.
	if ib.conns--; ib.conns <= 0 {
		delete(s.ipBudgets.by, c.ip)
	}
}
