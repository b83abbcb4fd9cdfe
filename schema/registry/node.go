package registry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Node is a registry node as a process runs it: it answers HTTP from the
// moment it starts, and until its Server has opened and replayed the log
// it answers every request with 503 and the reason in Confluent's error
// shape. A damaged or missing log (a _schemas topic with the wrong
// partition count, a broker that is down) thus makes the registry
// unhealthy, never the process around it — in `tributary standalone`, the
// broker keeps serving Kafka. Opening is retried until it succeeds.
type Node struct {
	cfg  Config
	open func(context.Context) (Log, error)

	mu   sync.RWMutex
	srv  *Server
	down error // why the node does not serve yet; nil once srv is set

	resetMu sync.Mutex // one acceptReset at a time (node_reset.go)

	tried chan struct{} // closed when the first attempt to open has ended
	stop  context.CancelFunc
	done  chan struct{}
}

// retryOpen bounds the wait between attempts to open the log.
const retryOpen = 30 * time.Second

// Start returns a Node that opens its log with open (e.g. OpenKafkaLog)
// and replays it in the background.
func Start(cfg Config, open func(context.Context) (Log, error)) (*Node, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	n := &Node{cfg: cfg, open: open, down: errors.New("still replaying the " + cfg.Topic + " topic"),
		tried: make(chan struct{}), stop: stop, done: make(chan struct{})}
	go n.run(ctx)
	return n, nil
}

func (n *Node) run(ctx context.Context) {
	defer close(n.done)
	wait := time.Second
	var last string
	for attempt := 1; ; attempt++ {
		srv, err := n.start(ctx)
		n.mu.Lock()
		if err == nil {
			n.srv, n.down = srv, nil
		} else if ctx.Err() == nil {
			n.down = err
		}
		n.mu.Unlock()
		if attempt == 1 {
			close(n.tried)
		}
		if err == nil || ctx.Err() != nil {
			return
		}
		// One line per new reason: an operator sees why, not a retry storm.
		if msg := err.Error(); msg != last {
			n.cfg.Logger.Error("schema registry unavailable; retrying", "topic", n.cfg.Topic, "err", err, "retry_in", wait)
			last = msg
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		wait = min(2*wait, retryOpen)
	}
}

func (n *Node) start(ctx context.Context) (*Server, error) {
	l, err := n.open(ctx)
	if err != nil {
		return nil, err
	}
	return NewWithLog(ctx, l, n.cfg)
}

// Server returns the running Server, or nil and the reason it is not
// running yet.
func (n *Node) Server() (*Server, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.srv, n.down
}

// ServeHTTP serves the REST API, or 503 while the node has no Server. A
// request that arrives during the first attempt to open waits for it (up
// to SyncTimeout), so that clients which start with the process do not
// see a 503 on a healthy start.
func (n *Node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-n.tried:
	case <-r.Context().Done():
	case <-time.After(n.cfg.SyncTimeout):
	}
	if r.Method == http.MethodPost && r.URL.Path == AcceptResetPath {
		n.cfg.Auth.handler(http.HandlerFunc(n.acceptReset), n.cfg.Logger).ServeHTTP(w, r) // admins only
		return
	}
	srv, down := n.Server()
	if srv == nil {
		// Only users see why: the reason may name brokers and topics.
		n.cfg.Auth.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, errUnavailable(down))
		}), n.cfg.Logger).ServeHTTP(w, r)
		return
	}
	srv.Handler().ServeHTTP(w, r)
}

// Serve answers HTTP requests on ln until ctx is done, then shuts down
// gracefully (in-flight requests get 5 seconds).
func (n *Node) Serve(ctx context.Context, ln net.Listener) error {
	return serveHTTP(ctx, ln, n, n.cfg)
}

// Close stops opening or replaying, and closes the Server if it runs.
func (n *Node) Close() error {
	n.stop()
	<-n.done
	if srv, _ := n.Server(); srv != nil {
		return srv.Close()
	}
	return nil
}

// serveHTTP runs h on ln with the timeouts of cfg until ctx is done.
//
// Every phase of a request is bounded, so a client that sends slowly (or
// never) holds a connection for a bounded time: headers ReadHeaderTimeout,
// the whole request ReadTimeout, the answer WriteTimeout (longer than
// SyncTimeout, which bounds the work), an idle keep-alive IdleTimeout.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, cfg Config) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(10*time.Second, cfg.ReadTimeout),
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	cfg.Logger.Info("schema registry listening", "addr", ln.Addr().String(), "topic", cfg.Topic, "https", cfg.TLS != nil, "basic_auth", cfg.Auth != nil)
	select {
	case err := <-errc:
		return fmt.Errorf("registry: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return hs.Shutdown(shut)
	}
}
