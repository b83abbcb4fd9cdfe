package registry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a registry node.
type Config struct {
	// Bootstrap lists broker addresses (host:port). Required by New.
	Bootstrap []string
	// Topic holds the registry's state. Default: "_schemas".
	Topic string
	// DefaultCompatibility applies to subjects while no global level has
	// been set through PUT /config. Default: BACKWARD, as in Confluent.
	DefaultCompatibility string
	// Logger receives one line per operator-relevant event. Default:
	// slog.Default().
	Logger *slog.Logger
	// SyncTimeout bounds how long a request waits to read the topic up to
	// its end or to have its write acknowledged. Default: 10s.
	SyncTimeout time.Duration
	// MaxSchemaBytes and MaxSchemaDepth bound a schema text before it is
	// parsed, in requests and on replay (see limits.go): a larger or deeper
	// schema is refused with 42201 naming the limit. Defaults:
	// DefaultMaxSchemaBytes, DefaultMaxSchemaDepth.
	MaxSchemaBytes int
	MaxSchemaDepth int
	// MaxSchemaNodes, MaxUnionBranches and MaxSchemaFields bound the
	// number of types, fields and branches in a schema and how wide its
	// unions, and its records and enums, are (limits.go), measured before
	// it is parsed; past one, 42201 naming it. They bound requests only:
	// a schema already stored is served whatever its shape. Defaults:
	// DefaultMaxSchemaNodes, DefaultMaxUnionBranches, DefaultMaxSchemaFields.
	MaxSchemaNodes   int
	MaxUnionBranches int
	MaxSchemaFields  int
	// CheckTimeout bounds a compatibility check (registration, or
	// /compatibility); past it the request gets 42201 naming it, and at most
	// GOMAXPROCS checks run at once (compat.go). Default: 5s.
	CheckTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included, so a
	// client trickling its body is cut off. Default: 30s.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer. Default: SyncTimeout + 20s.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long. Default: 2m.
	IdleTimeout time.Duration
	// Checkpoint is the file, apart from the topic, where the node keeps the
	// highest schema id handed out and which topic it read (checkpoint.go):
	// with it, a topic deleted or rewound never makes an id be reused.
	// Empty: none, and a lost topic's ids may be handed out again.
	Checkpoint string
	// AcceptReset accepts, at start, that the topic lost records the
	// checkpoint knew of: an id floor is appended and writes resume above
	// it. Without it such a node refuses writes.
	AcceptReset bool
	// TLS, when set, makes Serve answer HTTPS only.
	TLS *tls.Config
	// Auth, when set, admits only requests with HTTP basic credentials of
	// a user whose role allows them (auth.go).
	Auth *BasicAuth
}

func (c *Config) limits() schemaLimits {
	return schemaLimits{maxBytes: c.MaxSchemaBytes, maxDepth: c.MaxSchemaDepth, maxNodes: c.MaxSchemaNodes,
		maxBranches: c.MaxUnionBranches, maxFields: c.MaxSchemaFields}
}

// DefaultTopic is where registry nodes keep their state unless configured
// otherwise; it is the topic Confluent Schema Registry uses.
const DefaultTopic = "_schemas"

func (c *Config) setDefaults() error {
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.DefaultCompatibility == "" {
		c.DefaultCompatibility = Backward
	}
	level, ok := parseLevel(c.DefaultCompatibility)
	if !ok {
		return fmt.Errorf("registry: default compatibility %q is not one of %s", c.DefaultCompatibility, validCompatibilityLevelsText)
	}
	c.DefaultCompatibility = level
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = 10 * time.Second
	}
	if c.MaxSchemaBytes <= 0 {
		c.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	if c.MaxSchemaDepth <= 0 {
		c.MaxSchemaDepth = DefaultMaxSchemaDepth
	}
	if c.MaxSchemaNodes <= 0 {
		c.MaxSchemaNodes = DefaultMaxSchemaNodes
	}
	if c.MaxUnionBranches <= 0 {
		c.MaxUnionBranches = DefaultMaxUnionBranches
	}
	if c.MaxSchemaFields <= 0 {
		c.MaxSchemaFields = DefaultMaxSchemaFields
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = DefaultCheckTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = c.SyncTimeout + 20*time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	return nil
}

// Server is one registry node: an http.Handler over a state rebuilt from
// its Log. Any number of nodes may share a log; they agree on every id and
// version because they apply the same records in the same order.
type Server struct {
	cfg Config
	log Log

	mu      sync.RWMutex
	st      *state
	advance chan struct{} // closed and replaced whenever st.next moves
	readErr error         // why reading the log failed last, nil once it reads again

	// checks holds a slot per compatibility check running (compat.go),
	// parses one per request reading or parsing a schema (readSchema).
	checks, parses chan struct{}

	// The checkpoint (checkpoint.go): the topic's id when the node
	// started, why writes are refused (nil: they are not), and the
	// checkpoint as last written.
	topicID string
	refused atomic.Pointer[string]
	cpOpen  atomic.Bool
	cpMu    sync.Mutex
	cp      *checkpoint
	cpErr   failureLog

	// writeMu keeps one write in flight per node: two writes from the same
	// node would only race each other for the same version slot.
	writeMu sync.Mutex

	handler http.Handler
	stop    context.CancelFunc
	done    chan struct{}
}

// New connects to the brokers in cfg.Bootstrap, creates the topic if it is
// missing (one partition, kept forever), and returns once the node has
// replayed the topic to its end — so it serves every schema any node
// acknowledged before New was called.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	l, err := OpenKafkaLog(ctx, KafkaLogConfig{Bootstrap: cfg.Bootstrap, Topic: cfg.Topic, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	return NewWithLog(ctx, l, cfg)
}

// NewWithLog is New over any Log, e.g. a MemoryLog in tests. The Server
// owns l from the call on: it closes l in Close, or at once if it fails.
func NewWithLog(ctx context.Context, l Log, cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		l.Close()
		return nil, err
	}
	tailCtx, stop := context.WithCancel(context.Background())
	s := &Server{
		cfg:     cfg,
		log:     l,
		st:      newState(),
		advance: make(chan struct{}),
		checks:  make(chan struct{}, runtime.GOMAXPROCS(0)),
		parses:  make(chan struct{}, 4*runtime.GOMAXPROCS(0)),
		stop:    stop,
		done:    make(chan struct{}),
	}
	s.st.limits = cfg.limits().replay()
	s.handler = cfg.Auth.handler(s.routes(), cfg.Logger)
	go s.tail(tailCtx)
	// Replay is bounded by ctx alone, not SyncTimeout: a long-lived topic
	// may take longer to read than any one request should wait.
	start := time.Now()
	end, err := l.End(ctx)
	if err == nil {
		err = s.waitFor(ctx, end)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("registry: replay %s: %w", cfg.Topic, err)
	}
	if err := s.openCheckpoint(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.mu.RLock()
	cfg.Logger.Info("schema registry replayed its log", "topic", cfg.Topic, "records", s.st.next,
		"subjects", len(s.st.subjects), "schemas", s.st.schemaCount(), "took", time.Since(start).Round(time.Millisecond))
	s.mu.RUnlock()
	return s, nil
}

// Handler returns the Confluent Schema Registry REST API of this node.
func (s *Server) Handler() http.Handler { return s.handler }

// Close stops reading the log and closes it. In-flight requests fail.
func (s *Server) Close() error {
	s.stop()
	err := s.log.Close()
	<-s.done
	return err
}

// tail applies the log to the state for as long as the node runs.
func (s *Server) tail(ctx context.Context) {
	defer close(s.done)
	for {
		recs, err := s.log.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, errLogClosed) {
				return
			}
			s.cfg.Logger.Warn("schema registry: reading its log failed; retrying", "topic", s.cfg.Topic, "err", err)
			s.mu.Lock()
			s.readErr = err
			s.mu.Unlock()
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		s.mu.Lock()
		s.readErr = nil
		for _, r := range recs {
			if why := s.st.apply(r); why != "" {
				s.cfg.Logger.Error("schema registry: skipped a log record", "topic", s.cfg.Topic, "offset", r.Offset, "reason", why)
			}
		}
		close(s.advance)
		s.advance = make(chan struct{})
		s.mu.Unlock()
		if err := s.saveCheckpoint(0); err != nil {
			s.cpErr.failed(s.cfg.Logger, "schema registry: could not record how far it read in its checkpoint; registrations of new schemas fail until it can", err)
		} else {
			s.cpErr.recovered(s.cfg.Logger, "schema registry: its checkpoint is written again")
		}
	}
}

// waitFor blocks until the state has applied every record before offset.
func (s *Server) waitFor(ctx context.Context, offset int64) error {
	for {
		s.mu.RLock()
		applied, ch := s.st.next, s.advance
		s.mu.RUnlock()
		if applied >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return errLogClosed
		}
	}
}

// catchUp blocks until the state reflects every write acknowledged before
// the call, by any node.
func (s *Server) catchUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SyncTimeout)
	defer cancel()
	end, err := s.log.End(ctx)
	if err != nil {
		return err
	}
	return s.waitFor(ctx, end)
}

// view runs fn on the state. A "not found" answer may only mean this node
// has not yet read another node's write, so it catches up and asks again
// before giving that answer.
func (s *Server) view(ctx context.Context, fn func(st *state) error) error {
	s.mu.RLock()
	err := fn(s.st)
	s.mu.RUnlock()
	var ae *apiError
	if !errors.As(err, &ae) || ae.status() != http.StatusNotFound {
		return err
	}
	if s.catchUp(ctx) != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fn(s.st)
}

// storeErr turns a failure to use the log into Confluent's 50001 or 50002.
func storeErr(op string, err error) *apiError {
	if errors.Is(err, context.DeadlineExceeded) {
		return errTimeout(op)
	}
	return errStore(op, err)
}

// Serve answers HTTP requests on ln until ctx is done, then shuts down
// gracefully (in-flight requests get 5 seconds). It does not close s.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return serveHTTP(ctx, ln, s.Handler(), s.cfg)
}

// ListenAndServe runs a registry node on addr (e.g. "127.0.0.1:8081")
// until ctx is done: New, then Serve, then Close.
func ListenAndServe(ctx context.Context, addr string, cfg Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	s, err := New(ctx, cfg)
	if err != nil {
		ln.Close()
		return err
	}
	defer s.Close()
	return s.Serve(ctx, ln)
}
