// Package netserver is the broker's connection layer: it accepts
// connections on the listeners, frames Kafka requests off them and
// responses onto them, and bounds what each client may make the broker
// hold. What a request means is not its business: it decodes a request
// whose key and version the Handler serves (Config.Supports) and hands it
// to the connection's Handler, which the broker builds (Config.NewHandler).
//
// What a caller may rely on:
//   - Requests pipelined on one connection are started in order on the
//     connection's read goroutine (Handler.Serve), and their responses are
//     written in the same order, whenever each becomes ready (Pending):
//     a slow response delays those behind it and never reorders them. At
//     most 32 requests of a connection are unanswered at once; past that
//     the connection is not read (backpressure).
//   - A frame is checked before it is read: its size against
//     MaxRequestBytes (and SASLMaxReceiveSize before login), and its bytes
//     against the request budget (QueuedMaxRequestBytes, with a share per
//     address and per logged-in principal, and a small budget of its own
//     for clients not logged in). A body is read as its bytes arrive, never
//     allocated at the size a frame announces, and holds its budget until
//     its response is written or dropped.
//   - A malformed or oversized request, a panic in a handler or while
//     writing, a client that stalls mid-request, stops reading its
//     responses or stays idle: each closes its own connection, logged, and
//     nothing else. Connections are capped in total and per address
//     (Config.Limits, read at each accept).
//   - A connection's principal is User:ANONYMOUS, or User:<CN> of a
//     verified client certificate on a TLS listener, until the handler
//     logs it in (Conn.Login, after SASL); a throttled connection
//     (Throttle.Mute) is not read until its throttle ends.
//   - Close stops accepting and reading; the responses to requests already
//     read are still written before it returns.
//
// Nothing here imports the broker: the broker wires a Server in New.
package netserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/internal/budget"
)

// Config is what a Server needs from the broker.
type Config struct {
	Logger *slog.Logger
	// ListenAttrs are logged with each listener's start (the broker's
	// node and data directory).
	ListenAttrs []any

	MaxRequestBytes                   int32 // socket.request.max.bytes
	SASLMaxReceiveSize                int32 // a frame before login, on a SASL listener
	RequestReadTimeout                time.Duration
	ResponseWriteTimeout              time.Duration
	ConnectionsMaxIdle                time.Duration
	ConnectionsMaxIdleUnauthenticated time.Duration
	QueuedMaxRequestBytes             int64 // queued.max.request.bytes
	QueuedMaxRequestBytesPerIP        int64
	QueuedMaxRequestBytesPerPrincipal int64
	// Limits are max.connections and max.connections.per.ip now: they
	// may change at run time and apply to the next connection accepted.
	Limits func() (maxConns, perIP int)
	// TLS serves the SSL and SASL_SSL listeners; nil: none may be served.
	TLS *TLS

	// Supports reports whether key at version is served: anything else
	// is refused before its body is decoded.
	Supports func(key, version int16) bool
	// CheckBody, when set, may refuse a served request's body before it
	// is decoded (bounds that decoding itself would not keep).
	CheckBody func(key, version int16, body []byte) error
	// APIVersionsFallback answers an ApiVersions request at a version not
	// served: the protocol says to answer v0 with the ranges served.
	APIVersionsFallback func(correlationID int32) Response
	// NewHandler makes the handler of a new connection.
	NewHandler func(c *Conn) Handler
	// Observer is told of connections and requests (metrics); nil: none.
	Observer Observer
}

// Observer is told of events a metric counts. Its methods run on the
// connections' goroutines and must not block.
type Observer interface {
	// ConnAccepted: a connection from a listener was admitted.
	ConnAccepted()
	// HandlerStarted: a request read at read is handed to its handler.
	HandlerStarted(key int16, read time.Time)
	// ResponseDone: a request's response was written (answered) or
	// dropped with its connection, or its handler panicked.
	ResponseDone(key, version int16, read time.Time, answered bool)
}

// Handler serves the requests of one connection.
type Handler interface {
	// Serve starts one request, on the connection's read goroutine, and
	// returns its pending response; nil closes the connection unanswered.
	// What must happen in request order happens here; waiting happens in
	// Later. A Produce request's frame is reused once its response is
	// written (conn_buffers.go): nothing may keep a slice of a Produce
	// request past that.
	Serve(req Request) *Pending
}

// Server serves the listeners of one broker.
type Server struct {
	cfg Config

	closing chan struct{} // closed by Close: accept loops end
	serving chan struct{} // closed once the first listeners are bound

	mu        sync.Mutex
	listeners []*boundListener
	conns     map[*Conn]struct{}
	perIP     map[string]int // open connections per remote IP
	ipBudgets ipBudgets      // per-address shares of budget
	closed    bool
	connWG    sync.WaitGroup

	budget        *budget.Budget // queued.max.request.bytes
	preAuthBudget *budget.Budget // requests before login (conn_preauth.go)
	// principalBudgets are the logged-in principals' shares of budget
	// (conn_preauth.go): one per principal ever seen, which only
	// credentials or certificates make.
	principalBudgets sync.Map // string -> *budget.Budget
	counters         connCounters
	lastRefusalLog   atomic.Int64 // unix nanos of the last refused-connection line
}

// New makes a server; it serves nothing until Serve.
func New(cfg Config) *Server {
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	return &Server{
		cfg:           cfg,
		closing:       make(chan struct{}),
		serving:       make(chan struct{}),
		conns:         map[*Conn]struct{}{},
		perIP:         map[string]int{},
		budget:        budget.New(cfg.QueuedMaxRequestBytes),
		preAuthBudget: budget.New(preAuthBudgetFrames * int64(cfg.SASLMaxReceiveSize)),
	}
}

type noObserver struct{}

func (noObserver) ConnAccepted()                                        {}
func (noObserver) HandlerStarted(int16, time.Time)                      {}
func (noObserver) ResponseDone(key, version int16, _ time.Time, _ bool) {}

// Serving is closed once the server has bound its first listeners: from
// then on DialInternal connects.
func (s *Server) Serving() <-chan struct{} { return s.serving }

// Serve serves every listener ls[i] on lns[i] until Close, and returns nil
// after Close, or the first listener's failure (after closing the others'
// listeners).
func (s *Server) Serve(ls []Listener, lns []net.Listener) error {
	if len(ls) != len(lns) || len(ls) == 0 {
		return fmt.Errorf("broker: %d listeners with %d sockets", len(ls), len(lns))
	}
	bound := make([]*boundListener, len(ls))
	for i, l := range ls {
		bl := &boundListener{Listener: l, ln: lns[i]}
		if l.Protocol.TLS() {
			if s.cfg.TLS == nil {
				return fmt.Errorf("broker: listener %s needs a certificate (--tls-cert, --tls-key)", l)
			}
			bl.tls = s.cfg.TLS.config()
		}
		bound[i] = bl
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("broker: closed")
	}
	if len(s.listeners) == 0 {
		close(s.serving)
	}
	s.listeners = append(s.listeners, bound...)
	s.mu.Unlock()
	errc := make(chan error, len(bound))
	for _, bl := range bound {
		go func() { errc <- s.serveListener(bl) }()
	}
	var first error
	for range bound {
		if err := <-errc; err != nil && first == nil {
			first = err
			for _, bl := range bound {
				bl.ln.Close()
			}
		}
	}
	return first
}

func (s *Server) serveListener(l *boundListener) error {
	ln := l.ln
	s.cfg.Logger.Info("broker listening", append([]any{"listener", l.Protocol, "addr", ln.Addr().String()}, s.cfg.ListenAttrs...)...)
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return nil
			default:
			}
			if errListenerClosed(err) {
				return fmt.Errorf("listener %s: %w", l.Protocol, err)
			}
			// Out of descriptors, or any other failure of one accept:
			// keep serving the connections we have and try again.
			if delay == 0 {
				s.cfg.Logger.Warn("accepting connections failed; retrying with backoff", "listener", l.Protocol, "err", err)
			}
			delay = acceptBackoff(delay)
			select {
			case <-time.After(delay):
			case <-s.closing:
				return nil
			}
			continue
		}
		if delay != 0 {
			s.cfg.Logger.Info("accepting connections again", "listener", l.Protocol)
			delay = 0
		}
		c := s.newConn(l, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		if setting := s.admitLocked(c); setting != "" {
			s.mu.Unlock()
			nc.Close()
			s.logRefusal(nc.RemoteAddr(), setting)
			continue
		}
		s.connWG.Add(1)
		s.mu.Unlock()
		s.cfg.Observer.ConnAccepted()
		go s.run(c)
	}
}

// run serves an admitted connection and forgets it once it is done.
func (s *Server) run(c *Conn) {
	defer s.connWG.Done()
	c.serve()
	s.mu.Lock()
	s.forgetLocked(c)
	s.mu.Unlock()
}

// DialInternal connects to the server in-process, over a pipe, as
// principal (logged in, no TLS and no SASL), as a client of the first
// listener. Before the server serves its listeners it waits for them as
// long as ctx allows; after Close it fails.
func (s *Server) DialInternal(ctx context.Context, principal string) (net.Conn, error) {
	select {
	case <-s.serving:
	case <-s.closing:
		return nil, errors.New("broker: closed")
	case <-ctx.Done():
		return nil, fmt.Errorf("broker: not serving yet: %w", context.Cause(ctx))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("broker: closed")
	}
	if len(s.listeners) == 0 {
		return nil, errors.New("broker: not serving yet")
	}
	l := &boundListener{Listener: s.listeners[0].Listener, ln: s.listeners[0].ln}
	client, server := net.Pipe()
	c := s.newConn(l, server)
	c.principal, c.authenticated, c.internal = principal, true, true
	if setting := s.admitLocked(c); setting != "" {
		client.Close()
		server.Close()
		return nil, errors.New("broker: in-process connection refused: " + setting + " reached")
	}
	s.connWG.Add(1)
	go s.run(c)
	return client, nil
}

// Listening is a listener being served and its bound address.
type Listening struct {
	Listener
	Addr net.Addr
}

// Listening lists the listeners being served, in the order given to Serve.
func (s *Server) Listening() []Listening {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Listening, 0, len(s.listeners))
	for _, l := range s.listeners {
		out = append(out, Listening{Listener: l.Listener, Addr: l.ln.Addr()})
	}
	return out
}

// Addr is the address of the first PLAINTEXT listener (else of the first
// listener), or "" before Serve.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return ""
	}
	for _, l := range s.listeners {
		if l.Protocol == Plaintext {
			return l.ln.Addr().String()
		}
	}
	return s.listeners[0].ln.Addr().String()
}

// Close stops accepting and reading new requests, and returns once the
// responses to the requests already read are written (or their
// connections dropped).
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.connWG.Wait()
		return
	}
	s.closed = true
	close(s.closing)
	for _, l := range s.listeners {
		l.ln.Close()
	}
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	s.connWG.Wait()
}
