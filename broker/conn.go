package broker

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

// conn serves one client connection. Requests are read and started in order
// by serve; a writer goroutine writes their responses in the same order,
// waiting for each one, so a slow acks=all produce or a long-poll fetch
// delays the responses behind it but never reorders them. A small response
// that is ready at once with nothing ahead of it is written by the read
// loop itself (writeInline).
type conn struct {
	b      *Broker
	nc     net.Conn // a *tls.Conn on SSL and SASL_SSL listeners
	ip     string
	logger *slog.Logger

	listener *boundListener
	// auth is the connection's authentication: its principal, and on a
	// SASL listener the exchange in progress. Only the read goroutine
	// changes it, before it reads the next request.
	auth connAuth
	// ipBudget is the address's share of the request budget; nil for
	// in-process connections (conn_preauth.go).
	ipBudget *budget.Budget
	// princBudget is the logged-in principal's share, set at its first
	// request (read goroutine only).
	princBudget *budget.Budget

	queue    chan *pending
	inFlight atomic.Int64 // requests read whose responses are not written yet
	quota    connQuota    // muted while its client is over a quota (conn_quota.go)

	mu      sync.Mutex    // orders stopReading against read deadlines
	stopped chan struct{} // closed by stopReading
	once    sync.Once
	gone    chan struct{} // closed by abort: the connection is being dropped
	goneOne sync.Once

	// readDeadline is the read deadline last set by setReadDeadline; only
	// the read goroutine sets it.
	readDeadline time.Time
}

// pending is one request's response, ready once done is closed.
type pending struct {
	done chan struct{}
	resp response // nil: no response (acks=0 produce)

	req      *request    // set by the read loop, for the panic log
	start    time.Time   // when the request was read, for the latency metric
	held     requestHold // the request's share of the budgets, released once written (conn_preauth.go)
	frame    []byte      // a Produce request's frame, pooled again once written (conn_buffers.go)
	panicked *panicValue // the handler panicked: no response, drop the connection
}

// panicValue is a recovered panic with the stack where it happened.
type panicValue struct {
	value any
	stack []byte
}

// response is anything that can write itself, with its frame, to a
// connection: an encoded kmsg response or a zero-copy fetch response.
type response interface {
	writeTo(nc net.Conn) error
}

// releaser is a response that holds resources (segment files) until it is
// written; a response that will never be written must release them.
type releaser interface {
	release()
}

// request is a decoded request with its header.
type request struct {
	kmsg.Request
	correlationID int32
	clientID      string
	principal     string // User:<name> of the connection, for ACLs
	host          string // the client's IP, for ACLs
	// quota is the connection's throttle (conn_quota.go); nil in fuzz tests.
	quota *connQuota
}

func newConn(b *Broker, l *boundListener, nc net.Conn) *conn {
	c := &conn{
		b:        b,
		nc:       nc,
		ip:       remoteIP(nc.RemoteAddr()),
		logger:   b.logger.With("remote", nc.RemoteAddr().String()),
		listener: l,
		queue:    make(chan *pending, maxInFlight),
		stopped:  make(chan struct{}),
		gone:     make(chan struct{}),
	}
	c.auth.principal = anonymous
	c.auth.authenticated = !l.Protocol.SASL()
	if l.tls != nil {
		c.nc = tls.Server(nc, l.tls)
		c.logger = c.logger.With("listener", l.Protocol)
	}
	return c
}

// handshake completes the TLS handshake within the request read timeout,
// so that a client certificate names the principal before the first
// request, and a client that never finishes it is dropped.
func (c *conn) handshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	c.setReadDeadline(time.Now().Add(c.b.cfg.RequestReadTimeout))
	tc.SetWriteDeadline(time.Now().Add(c.b.cfg.ResponseWriteTimeout))
	if err := tc.Handshake(); err != nil {
		if !c.isStopped() {
			c.logger.Warn("closing connection: TLS handshake failed", "err", err)
		}
		return false
	}
	c.auth.principal = tlsPrincipal(tc.ConnectionState())
	return true
}

// stopReading makes serve stop after the request it is reading; responses
// to requests already read are still written.
func (c *conn) stopReading() {
	c.once.Do(func() {
		c.mu.Lock()
		close(c.stopped)
		c.nc.SetReadDeadline(time.Now())
		c.mu.Unlock()
	})
}

// setReadDeadline sets the read deadline unless reading was stopped, whose
// immediate deadline must not be pushed back.
func (c *conn) setReadDeadline(t time.Time) {
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
func (c *conn) setIdleDeadline() {
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
func (c *conn) setRequestDeadline(r *bufio.Reader, want int) {
	if r.Buffered() >= want {
		return
	}
	c.setReadDeadline(time.Now().Add(c.b.cfg.RequestReadTimeout))
}

// abort drops the connection: reads and writes fail, a wait for request
// budget ends, and what is still queued is released unwritten.
func (c *conn) abort() {
	c.goneOne.Do(func() {
		close(c.gone)
		c.nc.Close()
	})
}

func (c *conn) serve() {
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

func (c *conn) readLoop() {
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
		if size < 8 || size > c.b.cfg.MaxRequestBytes {
			// Checked before reading on: a frame may claim any size.
			c.logger.Warn("closing connection: request size out of bounds",
				"size", size, "max", c.b.cfg.MaxRequestBytes, "setting", "socket.request.max.bytes")
			return
		}
		if !c.frameSizeAllowed(size) {
			return
		}
		frame, held, ok := c.readBody(r, int(size))
		if !ok {
			return
		}
		start := time.Now() // the frame is read: queue and total time start (metrics.go)
		req, err := decodeRequest(frame)
		if err != nil {
			held.release(c.b)
			var unsup *unsupportedVersion
			if errors.As(err, &unsup) && unsup.key == apiVersionsKey {
				// Clients probe ApiVersions with versions newer than ours;
				// the protocol says to answer v0 with our ranges.
				c.enqueue(ready(apiVersionsUnsupported(unsup.correlationID)))
				continue
			}
			c.logger.Warn("closing connection: malformed request", "err", err)
			return
		}
		c.b.metrics.handlerStarts(req, start)
		p := c.handle(req)
		if p == nil {
			held.release(c.b)
			return // the handler panicked
		}
		p.req, p.held, p.start = req, held, start
		if _, ok := req.Request.(*kmsg.ProduceRequest); ok {
			p.frame = frame // back to its pool once the response is written
		}
		if !c.writeInline(p) {
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
func (c *conn) awaitRequest(r *bufio.Reader) bool {
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
func (c *conn) readBody(r *bufio.Reader, size int) (body []byte, held requestHold, ok bool) {
	c.b.counters.reading.Add(1)
	defer c.b.counters.reading.Add(-1)
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
			held.release(c.b)
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			c.logReadEnd(err)
			return nil, requestHold{}, false
		}
	}
	return buf, held, true
}

func (c *conn) isGone() bool {
	select {
	case <-c.gone:
		return true
	default:
		return false
	}
}

func (c *conn) isStopped() bool {
	select {
	case <-c.stopped:
		return true
	default:
		return false
	}
}

func (c *conn) logReadEnd(err error) {
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
			"timeout", c.b.cfg.RequestReadTimeout)
		return
	}
	c.logger.Debug("connection read ended", "err", err)
}

func (c *conn) enqueue(p *pending) {
	c.inFlight.Add(1)
	c.queue <- p
}

// handle starts a request, turning a panic in its handler into a logged,
// closed connection (nil) instead of a dead broker.
func (c *conn) handle(req *request) (p *pending) {
	defer func() {
		if v := recover(); v != nil {
			c.logPanic(req, &panicValue{value: v, stack: debug.Stack()})
			p = nil
		}
	}()
	req.quota = &c.quota
	if c.sessionExpired(req) { // reauth.go
		return nil
	}
	if hook := testHookHandle.Load(); hook != nil {
		if p := (*hook)(req); p != nil {
			return p
		}
	}
	return c.b.handle(c, req)
}

// testHookHandle, when set by a test, may serve a request in place of its
// handler (e.g. to panic); nil in production.
var testHookHandle atomic.Pointer[func(req *request) *pending]

func (c *conn) logPanic(req *request, pv *panicValue) {
	attrs := []any{"panic", fmt.Sprint(pv.value), "stack", string(pv.stack)}
	if req != nil { // nil only for the ApiVersions fallback, answered before decoding
		attrs = append(attrs, "api", kmsg.NameForKey(req.Key()), "key", req.Key(),
			"version", req.GetVersion(), "client_id", req.clientID)
	}
	c.logger.Error("closing connection: panic while serving a request", attrs...)
}

// ready wraps a response that is complete at once.
func ready(r response) *pending {
	p := &pending{done: make(chan struct{}), resp: r}
	close(p.done)
	return p
}

// later returns a pending response completed by fill in its own goroutine.
// A panic in fill is recovered there and reported to the writer, which logs
// it and drops the connection.
func later(fill func() response) *pending {
	p := &pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer func() {
			if v := recover(); v != nil {
				p.resp = nil
				p.panicked = &panicValue{value: v, stack: debug.Stack()}
			}
		}()
		p.resp = fill()
	}()
	return p
}
