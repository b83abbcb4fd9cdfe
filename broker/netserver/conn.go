package netserver

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/budget"
)

// maxInFlight bounds the requests read from one connection whose responses
// are not written yet; past it the connection stops reading (backpressure).
const maxInFlight = 32

// Request bodies are read in pieces as their bytes arrive, never allocated
// at the size a frame announces: readChunk is the first piece, and the
// buffer doubles from there. readBufferSize is each connection's read
// buffer; larger reads bypass it.
const (
	readChunk      = 64 << 10
	readBufferSize = 16 << 10
)

// Conn serves one client connection. Requests are read and started in order
// by serve; a writer goroutine writes their responses in the same order,
// waiting for each one, so a slow acks=all produce or a long-poll fetch
// delays the responses behind it but never reorders them. A small response
// that is ready at once with nothing ahead of it is written by the read
// loop itself (writeInline).
type Conn struct {
	s       *Server
	handler Handler
	nc      net.Conn // a *tls.Conn on SSL and SASL_SSL listeners
	ip      string
	logger  *slog.Logger

	listener *boundListener
	// principal is User:<name> of the connection, User:ANONYMOUS until
	// proven; authenticated is false on a SASL listener until the
	// handler logs the client in. Only the read goroutine changes them.
	principal     string
	authenticated bool
	// internal: an in-process connection (DialInternal), which has no
	// principal's share of the budget.
	internal bool
	// ipBudget is the address's share of the request budget
	// (conn_preauth.go).
	ipBudget *budget.Budget
	// princBudget is the logged-in principal's share, set at its first
	// request (read goroutine only).
	princBudget *budget.Budget

	queue    chan *Pending
	inFlight atomic.Int64 // requests read whose responses are not written yet
	throttle Throttle     // muted while its client is over a quota (conn_quota.go)

	mu      sync.Mutex    // orders stopReading against read deadlines
	stopped chan struct{} // closed by stopReading
	once    sync.Once
	gone    chan struct{} // closed by abort: the connection is being dropped
	goneOne sync.Once

	// readDeadline is the read deadline last set by setReadDeadline; only
	// the read goroutine sets it.
	readDeadline time.Time
}

// Request is a decoded request with its header.
type Request struct {
	kmsg.Request
	CorrelationID int32
	ClientID      string
}

// produceKey is Produce's API key: its frames are pooled (conn_buffers.go).
const produceKey = 0

// newConn makes the connection of nc accepted on l, with its handler.
func (s *Server) newConn(l *boundListener, nc net.Conn) *Conn {
	c := &Conn{
		s:             s,
		nc:            nc,
		ip:            remoteIP(nc.RemoteAddr()),
		logger:        s.cfg.Logger.With("remote", nc.RemoteAddr().String()),
		listener:      l,
		principal:     Anonymous,
		authenticated: !l.Protocol.SASL(),
		queue:         make(chan *Pending, maxInFlight),
		stopped:       make(chan struct{}),
		gone:          make(chan struct{}),
	}
	if l.tls != nil {
		c.nc = tls.Server(nc, l.tls)
		c.logger = c.logger.With("listener", l.Protocol)
	}
	c.handler = s.cfg.NewHandler(c)
	return c
}

// NewConn makes a connection of nc on a listener l of s without serving
// it: for handlers driven directly (fuzzing, tests). Its requests are
// never read, and its budgets are not taken.
func (s *Server) NewConn(l Listener, nc net.Conn) *Conn {
	return s.newConn(&boundListener{Listener: l}, nc)
}

// Listener is the listener the connection came through.
func (c *Conn) Listener() Listener { return c.listener.Listener }

// Logger logs with the connection's remote address (and listener on TLS).
func (c *Conn) Logger() *slog.Logger { return c.logger }

// IP is the client's address without its port.
func (c *Conn) IP() string { return c.ip }

// RemoteAddr is the client's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Principal is the connection's principal: User:ANONYMOUS, User:<CN> of a
// verified client certificate, or the user it logged in as.
func (c *Conn) Principal() string { return c.principal }

// Authenticated reports whether requests beyond the login are served: on a
// SASL listener only once the client has logged in. Read goroutine only.
func (c *Conn) Authenticated() bool { return c.authenticated }

// Login makes principal the connection's, authenticated. Read goroutine
// only (the SASL handlers run there); a connection's principal never
// changes once logged in, which its budget share relies on.
func (c *Conn) Login(principal string) { c.principal, c.authenticated = principal, true }

// Throttle is the connection's throttle, which a quota mutes.
func (c *Conn) Throttle() *Throttle { return &c.throttle }

// handshake completes the TLS handshake within the request read timeout,
// so that a client certificate names the principal before the first
// request, and a client that never finishes it is dropped.
func (c *Conn) handshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	c.setReadDeadline(time.Now().Add(c.s.cfg.RequestReadTimeout))
	tc.SetWriteDeadline(time.Now().Add(c.s.cfg.ResponseWriteTimeout))
	if err := tc.Handshake(); err != nil {
		if !c.isStopped() {
			c.logger.Warn("closing connection: TLS handshake failed", "err", err)
		}
		return false
	}
	c.principal = tlsPrincipal(tc.ConnectionState())
	return true
}

// stopReading makes serve stop after the request it is reading; responses
// to requests already read are still written.
func (c *Conn) stopReading() {
	c.once.Do(func() {
		c.mu.Lock()
		close(c.stopped)
		c.nc.SetReadDeadline(time.Now())
		c.mu.Unlock()
	})
}

// setReadDeadline sets the read deadline unless reading was stopped, whose
// immediate deadline must not be pushed back.
func (c *Conn) setReadDeadline(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.stopped:
	default:
		c.nc.SetReadDeadline(t)
		c.readDeadline = t
	}
}

// setIdleDeadline gives the wait for the next request ConnectionsMaxIdle.
// A deadline set less than idleSlack ago is left as it is: resetting a
// socket deadline moves a runtime timer, and a producer that keeps its
// connection busy would otherwise pay for that on every request. The idle
// limit is thereby enforced to within 1/idleSlackDivisor of it.
func (c *Conn) setIdleDeadline() {
	idle := c.idleLimit()
	want := time.Now().Add(idle)
	if d := c.readDeadline; !d.After(want) && want.Sub(d) <= idle/idleSlackDivisor {
		return
	}
	c.setReadDeadline(want)
}

// idleSlackDivisor bounds how much earlier than ConnectionsMaxIdle an idle
// connection may be closed: 1/64 of it (under 10 s of the default 10 min).
const idleSlackDivisor = 64

// setRequestDeadline gives the rest of a request RequestReadTimeout unless
// its next want bytes are already buffered, so no read can block on them.
func (c *Conn) setRequestDeadline(r *bufio.Reader, want int) {
	if r.Buffered() >= want {
		return
	}
	c.setReadDeadline(time.Now().Add(c.s.cfg.RequestReadTimeout))
}

// abort drops the connection: reads and writes fail, a wait for request
// budget ends, and what is still queued is released unwritten.
func (c *Conn) abort() {
	c.goneOne.Do(func() {
		close(c.gone)
		c.nc.Close()
	})
}

func (c *Conn) serve() {
	if !c.handshake() {
		c.nc.Close()
		return
	}
	writerDone := make(chan struct{})
	go c.writeLoop(writerDone)
	c.readLoop()
	close(c.queue)
	<-writerDone
	c.nc.Close()
}

func (c *Conn) readLoop() {
	r := bufio.NewReaderSize(c.nc, readBufferSize)
	var sizeBuf [4]byte
	for {
		if !c.awaitRequest(r) {
			return
		}
		c.awaitUnmuted() // a throttled client's next request waits (conn_quota.go)
		c.setRequestDeadline(r, len(sizeBuf))
		if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
			c.logReadEnd(err)
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 8 || size > c.s.cfg.MaxRequestBytes {
			// Checked before reading on: a frame may claim any size.
			c.logger.Warn("closing connection: request size out of bounds",
				"size", size, "max", c.s.cfg.MaxRequestBytes, "setting", "socket.request.max.bytes")
			return
		}
		if !c.frameSizeAllowed(size) {
			return
		}
		frame, held, ok := c.readBody(r, int(size))
		if !ok {
			return
		}
		start := time.Now() // the frame is read: queue and total time start (the Observer)
		req, err := c.s.decodeRequest(frame)
		if err != nil {
			held.release(c.s)
			var unsup *UnsupportedVersion
			if errors.As(err, &unsup) && unsup.Key == APIVersionsKey {
				// Clients probe ApiVersions with versions newer than ours;
				// the protocol says to answer v0 with our ranges.
				c.enqueue(Ready(c.s.cfg.APIVersionsFallback(unsup.CorrelationID)))
				continue
			}
			c.logger.Warn("closing connection: malformed request", "err", err)
			return
		}
		c.s.cfg.Observer.HandlerStarted(req.Key(), start)
		p := c.handle(req)
		if p == nil {
			held.release(c.s)
			return // the handler panicked
		}
		p.api, p.held, p.start = requestAPI(req), held, start
		if req.Key() == produceKey {
			p.frame = frame // back to its pool once the response is written
		}
		// With the client's next request already arriving, the answer
		// goes to the writer, which sends it with the answers of the
		// requests read meanwhile in one write (conn_write.go), instead of
		// one write per answer from here.
		if r.Buffered() > 0 || !c.writeInline(p) {
			c.enqueue(p)
		} else if c.isGone() {
			return
		}
		select {
		case <-c.stopped:
			return
		default:
		}
	}
}

// awaitRequest waits for the first byte of the next request. A connection
// that sends nothing for ConnectionsMaxIdle while no response of its is
// pending is idle and gets closed; one waiting on a long poll is not.
func (c *Conn) awaitRequest(r *bufio.Reader) bool {
	for {
		if r.Buffered() > 0 {
			return true // the next request is here already
		}
		c.setIdleDeadline()
		_, err := r.Peek(1)
		if err == nil {
			return true
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || c.isStopped() {
			c.logReadEnd(err)
			return false
		}
		if c.inFlight.Load() == 0 {
			c.logger.Info("closing idle connection", "idle", c.idleLimit(), "logged_in", !c.preAuth(),
				"setting", "connections.max.idle.ms (before login: --connections-max-idle-unauthenticated)")
			return false
		}
	}
}

// readBody reads a request body of size bytes once the request budget has
// room for it. The buffer grows as bytes really arrive, so a frame that
// announces a large size and then stalls costs one chunk, not its size.
// On success the caller owns held bytes of the budget.
func (c *Conn) readBody(r *bufio.Reader, size int) (body []byte, held requestHold, ok bool) {
	c.s.counters.reading.Add(1)
	defer c.s.counters.reading.Add(-1)
	// Dropping the connection or shutting down ends the wait.
	if held, ok = c.acquireHold(size); !ok {
		return nil, requestHold{}, false
	}
	// The wait for budget was the broker's: the client gets the whole read
	// timeout for the body.
	c.setRequestDeadline(r, size)
	buf := getFrame(size)
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(len(buf), size-len(buf)))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+n]
		if err != nil && len(buf) < size {
			held.release(c.s)
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			c.logReadEnd(err)
			return nil, requestHold{}, false
		}
	}
	return buf, held, true
}

func (c *Conn) isGone() bool {
	select {
	case <-c.gone:
		return true
	default:
		return false
	}
}

func (c *Conn) isStopped() bool {
	select {
	case <-c.stopped:
		return true
	default:
		return false
	}
}

func (c *Conn) logReadEnd(err error) {
	if c.isStopped() {
		return
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		c.logger.Warn("closing connection: request frame cut short")
		return
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.logger.Warn("closing connection: request not received in time",
			"timeout", c.s.cfg.RequestReadTimeout)
		return
	}
	c.logger.Debug("connection read ended", "err", err)
}

func (c *Conn) enqueue(p *Pending) {
	c.inFlight.Add(1)
	c.queue <- p
}

// handle starts a request, turning a panic in its handler into a logged,
// closed connection (nil) instead of a dead broker.
func (c *Conn) handle(req Request) (p *Pending) {
	defer func() {
		if v := recover(); v != nil {
			c.logPanic(requestAPI(req), &Panic{Value: v, Stack: debug.Stack()})
			p = nil
		}
	}()
	return c.handler.Serve(req)
}

func (c *Conn) logPanic(a api, pv *Panic) {
	attrs := []any{"panic", fmt.Sprint(pv.Value), "stack", string(pv.Stack)}
	if a.known {
		attrs = append(attrs, "api", kmsg.NameForKey(a.key), "key", a.key,
			"version", a.version, "client_id", a.clientID)
	}
	c.logger.Error("closing connection: panic while serving a request", attrs...)
}
