package broker

// The broker's side of its connections. broker/netserver accepts them,
// frames requests and responses, and bounds what each client may hold;
// here each connection gets its session (conn: the listener a handler
// answers for, the SASL exchange in progress) and each request the fields
// its handler reads (request), and New gives the server what it needs
// from the broker: the API registry (handlers.go, broker/kafkaapi), the dynamic connection
// caps (broker/settings) and the metrics.

import (
	"log/slog"
	"net"
	"sync/atomic"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/broker/saslapi"
	"github.com/tributary-io/tributary/broker/topicapi"
)

// conn is the broker's session of one client connection.
type conn struct {
	*netserver.Conn
	b        *Broker
	listener Listener     // the listener the client came through
	logger   *slog.Logger // with the client's address
	ip       string       // the client's address, for ACLs and login limits
	// auth is the SASL exchange in progress and the session it started
	// (broker/saslapi, sasl.go).
	auth saslapi.Session
}

// request is a decoded request with its header and who sent it, as every
// handler package sees it.
type request = kafkaapi.Request

// The connection layer's types under the names the handlers use.
type (
	pending  = netserver.Pending
	response = netserver.Response
)

// ready wraps a response that is complete at once.
func ready(r response) *pending { return netserver.Ready(r) }

// later returns a pending response completed by fill in its own goroutine.
func later(fill func() response) *pending { return netserver.Later(fill) }

// apiVersionsKey is ApiVersions' key, answered before SASL and at versions
// not served.
const apiVersionsKey = netserver.APIVersionsKey

// newServer makes the connection layer of b.
func (b *Broker) newServer(tls *netserver.TLS) *netserver.Server {
	cfg := b.cfg
	return netserver.New(netserver.Config{
		Logger:                            b.logger,
		ListenAttrs:                       []any{"node", b.selfID, "data_dir", cfg.DataDir},
		MaxRequestBytes:                   cfg.MaxRequestBytes,
		SASLMaxReceiveSize:                cfg.SASLMaxReceiveSize,
		RequestReadTimeout:                cfg.RequestReadTimeout,
		ResponseWriteTimeout:              cfg.ResponseWriteTimeout,
		ConnectionsMaxIdle:                cfg.ConnectionsMaxIdle,
		ConnectionsMaxIdleUnauthenticated: cfg.ConnectionsMaxIdleUnauthenticated,
		QueuedMaxRequestBytes:             cfg.QueuedMaxRequestBytes,
		QueuedMaxRequestBytesPerIP:        cfg.QueuedMaxRequestBytesPerIP,
		QueuedMaxRequestBytesPerPrincipal: cfg.QueuedMaxRequestBytesPerPrincipal,
		Limits:                            b.connLimits,
		TLS:                               tls,
		Supports:                          func(key, version int16) bool { return b.apis.Supports(key, version) },
		CheckBody:                         checkBody,
		APIVersionsFallback:               func(id int32) response { return b.apis.APIVersionsUnsupported(id) },
		NewHandler:                        func(nc *netserver.Conn) netserver.Handler { return b.newConn(nc) },
		Observer:                          b.metrics,
	})
}

// newConn starts the session of a connection.
func (b *Broker) newConn(nc *netserver.Conn) *conn {
	return &conn{Conn: nc, b: b, listener: nc.Listener(), logger: nc.Logger(), ip: nc.IP()}
}

// Serve starts one request of the connection (netserver.Handler).
func (c *conn) Serve(r netserver.Request) *pending {
	req := &request{Request: r.Request, CorrelationID: r.CorrelationID, ClientID: r.ClientID, Quota: c.Throttle()}
	if c.sessionExpired(req) { // sasl.go
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

// checkBody refuses, before decoding, a Metadata request naming more
// topics than allowed (broker/topicapi).
func checkBody(key, version int16, body []byte) error {
	if key == 3 {
		return topicapi.CheckMetadataTopics(version, body)
	}
	return nil
}

// ConnStats is a snapshot of the connection layer, for operators and tests.
type ConnStats = netserver.Stats

// ConnStats reports the connection layer's state.
func (b *Broker) ConnStats() ConnStats { return b.server.Stats() }

// Serve accepts connections on ln, a PLAINTEXT listener, until Close. It
// returns nil after Close.
func (b *Broker) Serve(ln net.Listener) error {
	return b.ServeListeners([]Listener{{Protocol: Plaintext}}, []net.Listener{ln})
}

// ServeListeners serves every listener ls[i] on lns[i] until Close, and
// returns nil after Close, or the first listener's failure (after closing
// the others' listeners).
func (b *Broker) ServeListeners(ls []Listener, lns []net.Listener) error {
	return b.server.Serve(ls, lns)
}

// Serving is closed once the broker has bound its first listeners: from
// then on DialInternal connects, so in-process clients (the standalone
// registry) start after it rather than retrying.
func (b *Broker) Serving() <-chan struct{} { return b.server.Serving() }

// Addr is the address of the first PLAINTEXT listener (else of the first
// listener), or "" before Serve.
func (b *Broker) Addr() string { return b.server.Addr() }

// TLSFiles names the PEM files of the broker's TLS identity.
type TLSFiles = netserver.TLSFiles

// ReloadTLS reads the certificate and key files again (on SIGHUP). New TLS
// connections get the new certificate; open ones are not dropped. A pair
// that does not load is reported and the current one kept.
func (b *Broker) ReloadTLS() error {
	if b.tls == nil {
		return nil
	}
	if err := b.tls.Reload(); err != nil {
		b.logger.Error("TLS certificate reload failed; keeping the current certificate", "err", err)
		return err
	}
	leaf, file := b.tls.Leaf()
	attrs := []any{"cert", file}
	if leaf != nil {
		attrs = append(attrs, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	}
	b.logger.Info("TLS certificate reloaded", attrs...)
	return nil
}
