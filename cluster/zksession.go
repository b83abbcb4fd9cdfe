package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultSessionTimeout is how long ZooKeeper waits after losing contact with
// a broker or consumer before it removes that member's ephemeral nodes. It is
// Kafka 0.8's default: short enough that a dead member's partitions move on
// within seconds, long enough to ride out a GC pause or a brief network blip.
const DefaultSessionTimeout = 6 * time.Second

// ZKSession is one ZooKeeper session rooted at a chroot, shared by the broker
// side (ZooKeeper) and the consumer groups (package consumer). It tells its
// owner when the session expired and when a new one replaced it, because
// that is the moment every ephemeral node and watch of this process is gone
// and must be re-created; the go-zookeeper client re-connects by itself but
// does not re-create them.
type ZKSession struct {
	Conn    *zk.Conn
	Paths   ZKPaths
	Timeout time.Duration
	Connect string

	// Expired receives (coalesced) when ZooKeeper reports this process's
	// session as expired, or when ZooKeeper was out of reach for half the
	// session timeout: assume the ephemeral nodes are gone.
	Expired <-chan struct{}
	// Renewed receives (coalesced) once there is a session again after
	// Expired: re-register ephemeral nodes and re-read whatever was watched.
	// It never becomes ready before the Expired it answers was received, so
	// an owner may select on both and trust the order it sees.
	Renewed <-chan struct{}

	log      *slog.Logger
	expired  chan struct{}
	renewed  chan struct{}
	done     chan struct{}
	closeOne sync.Once
}

// ZKOption tunes a ZooKeeper session.
type ZKOption func(*zkOptions)

type zkOptions struct {
	timeout   time.Duration
	dialer    zk.Dialer
	rebalance *time.Duration // JoinZooKeeper only: nil means DefaultLeaderRebalance
}

// WithSessionTimeout sets the session timeout (DefaultSessionTimeout when
// unset). ZooKeeper clamps it to its server's min/maxSessionTimeout, by
// default 2 and 20 ticks.
func WithSessionTimeout(d time.Duration) ZKOption {
	return func(o *zkOptions) { o.timeout = d }
}

// DialZooKeeper opens a session to the servers of connect and creates the
// chroot and the registries' top-level paths when they are missing, so a new
// cluster needs no setup. It waits for the session as long as ctx allows,
// logging while ZooKeeper cannot be reached.
func DialZooKeeper(ctx context.Context, connect string, logger *slog.Logger, opts ...ZKOption) (*ZKSession, error) {
	o := zkOptions{timeout: DefaultSessionTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if logger == nil {
		logger = slog.Default()
	}
	servers, chroot, err := ParseZKConnect(connect)
	if err != nil {
		return nil, err
	}
	zlog := logger.With("zookeeper", strings.Join(servers, ","))
	dialer := o.dialer
	if dialer == nil {
		dialer = net.DialTimeout
	}
	clientLog := &zkLogger{l: zlog}
	conn, events, err := zk.Connect(servers, o.timeout,
		zk.WithLogger(clientLog), zk.WithLogInfo(false), zk.WithDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %s: %w", connect, err)
	}
	s := &ZKSession{
		Conn:    conn,
		Paths:   ZKPaths{Root: chroot},
		Timeout: o.timeout,
		Connect: connect,
		log:     zlog,
		expired: make(chan struct{}),
		renewed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.Expired, s.Renewed = s.expired, s.renewed

	if err := s.waitSession(ctx, events, clientLog); err != nil {
		conn.Close()
		return nil, err
	}
	go s.watchEvents(events)

	for _, p := range []string{chroot, s.Paths.BrokerIDs(), s.Paths.Topics(), s.Paths.Root + "/consumers"} {
		if err := s.retryLostContact(ctx, "creating "+p, func() error { return s.EnsurePath(p) }); err != nil {
			s.Close()
			return nil, fmt.Errorf("zookeeper %s: creating %s: %w", connect, p, err)
		}
	}
	return s, nil
}

// retryLostContact runs step until it succeeds, fails for a reason other
// than lost contact with ZooKeeper, or ctx ends, waiting longer between
// attempts and logging each. A ZooKeeper that is still starting, or that
// restarts, can drop a connection right after giving a session; a member
// joining then should wait for it rather than exit or, worse, carry on half
// set up.
func (s *ZKSession) retryLostContact(ctx context.Context, what string, step func() error) error {
	backoff := 100 * time.Millisecond
	for {
		err := step()
		if err == nil || !lostContact(err) {
			return err
		}
		s.log.Warn(what+": lost contact with zookeeper; retrying", "connect", s.Connect, "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-s.done:
			return err
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// lostContact reports whether err only says that the connection to
// ZooKeeper or the session went away, so that the same request may succeed
// once the client has reconnected. The client passes on a failed socket
// write as it is, hence the net.Error.
func lostContact(err error) bool {
	for _, lost := range []error{zk.ErrConnectionClosed, zk.ErrNoServer, zk.ErrSessionExpired, zk.ErrSessionMoved, io.EOF} {
		if errors.Is(err, lost) {
			return true
		}
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}

func (s *ZKSession) waitSession(ctx context.Context, events <-chan zk.Event, client *zkLogger) error {
	warn := time.NewTicker(5 * time.Second)
	defer warn.Stop()
	start := time.Now()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return nil
			}
			if ev.State == zk.StateAuthFailed {
				return fmt.Errorf("zookeeper %s: authentication failed", s.Connect)
			}
		case <-warn.C:
			s.log.Warn("still waiting for a ZooKeeper session; is ZooKeeper running and is the connect string right?",
				"connect", s.Connect, "waited", time.Since(start).Round(time.Second), "last", client.last())
		case <-ctx.Done():
			return fmt.Errorf("zookeeper %s: no session after %v (is ZooKeeper running at that address? last: %s): %w",
				s.Connect, time.Since(start).Round(time.Millisecond), client.last(), ctx.Err())
		}
	}
}

// watchEvents turns the client's state changes into Expired and Renewed. It
// must keep reading: the client drops events nobody reads.
//
// ZooKeeper can only tell a client that its session expired once the client
// reaches it again, which a member cut off from ZooKeeper never does. So a
// member that stays disconnected for half the session timeout counts its
// session as lost on its own: by then the server is about to expire it and
// others are about to take over what it held. If the session survives after
// all, Renewed still fires, and the owner re-registers (a no-op) and
// re-reads.
//
// The owner sees Expired and Renewed strictly alternating, starting with
// Expired, however late it reads. Two buffered signals would not promise
// that: an owner busy while a session was lost and replaced found both
// pending, and a select picking Renewed first, then Expired, left it
// believing it had to wait for a session it already had, with its
// ephemeral nodes gone and nothing left to wake it.
func (s *ZKSession) watchEvents(events <-chan zk.Event) {
	lost := false
	// What the owner has yet to hear, in order: the loss, then the
	// renewal. owedRenewed is only ever set after owedExpired was taken
	// or together with it.
	owedExpired, owedRenewed := false, false
	var giveUp <-chan time.Time
	var timer *time.Timer
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer, giveUp = nil, nil
		}
	}
	defer stopTimer()
	markLost := func() {
		lost = true
		if owedRenewed {
			// The owner heard of the previous loss but not yet of its
			// renewal: it still counts itself lost, which is right again.
			owedRenewed = false
		} else {
			owedExpired = true
		}
	}
	for {
		var out chan struct{}
		switch {
		case owedExpired:
			out = s.expired
		case owedRenewed:
			out = s.renewed
		}
		select {
		case <-s.done:
			return
		case out <- struct{}{}:
			if owedExpired {
				owedExpired = false
			} else {
				owedRenewed = false
			}
		case <-giveUp:
			timer, giveUp = nil, nil
			if !lost {
				s.log.Warn("no contact with zookeeper for half the session timeout; treating the session as lost", "timeout", s.Timeout)
				markLost()
			}
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Type != zk.EventSession {
				continue
			}
			switch ev.State {
			case zk.StateExpired:
				stopTimer()
				if !lost {
					markLost()
				}
				s.log.Warn("zookeeper session expired; ephemeral nodes are gone and will be re-created")
			case zk.StateDisconnected:
				if timer == nil && !lost {
					timer = time.NewTimer(s.Timeout / 2)
					giveUp = timer.C
				}
				s.log.Info("disconnected from zookeeper; reconnecting")
			case zk.StateHasSession:
				stopTimer()
				if lost {
					lost = false
					owedRenewed = true
					s.log.Info("zookeeper session established again", "session", fmt.Sprintf("0x%x", s.Conn.SessionID()))
				}
			}
		}
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Done is closed by Close.
func (s *ZKSession) Done() <-chan struct{} { return s.done }

// Close ends the session, which removes this process's ephemeral nodes at
// once: the clean way to leave the cluster.
func (s *ZKSession) Close() {
	s.closeOne.Do(func() {
		close(s.done)
		s.Conn.Close()
	})
}

// EnsurePath creates path and its missing parents as empty persistent nodes.
func (s *ZKSession) EnsurePath(p string) error {
	if p == "" || p == "/" {
		return nil
	}
	ok, _, err := s.Conn.Exists(p)
	if err != nil || ok {
		return err
	}
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		if err := s.EnsurePath(p[:i]); err != nil {
			return err
		}
	}
	_, err = s.Conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// CreateEphemeral registers this process at path with data. If the node is
// left over from an earlier session of the same member (a restart after a
// crash, within the old session's timeout), it waits for ZooKeeper to expire
// it, as long as ctx allows. A node of this very session is updated in place.
func (s *ZKSession) CreateEphemeral(ctx context.Context, p string, data []byte) error {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		if err := s.EnsurePath(p[:i]); err != nil {
			return err
		}
	}
	logged := false
	for {
		_, err := s.Conn.Create(p, data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		exists, stat, gone, err := s.Conn.ExistsW(p)
		if err != nil {
			return err
		}
		if !exists {
			continue
		}
		if stat.EphemeralOwner == s.Conn.SessionID() {
			_, err := s.Conn.Set(p, data, -1)
			return err
		}
		if !logged {
			s.log.Warn("registration node is held by another session (an earlier run that has not timed out yet?); waiting for it to expire",
				"path", p, "session", fmt.Sprintf("0x%x", stat.EphemeralOwner))
			logged = true
		}
		select {
		case <-gone:
		case <-ctx.Done():
			old, _, _ := s.Conn.Get(p)
			return fmt.Errorf("%s is held by another live session (0x%x, data %s): another process is registered under the same id; stop it or choose another id: %w",
				p, stat.EphemeralOwner, old, ctx.Err())
		case <-s.done:
			return zk.ErrClosing
		}
	}
}

// zkLogger sends the go-zookeeper client's messages to slog. They are mostly
// connection trouble, which an operator wants to see but not as errors: the
// client retries by itself.
//
// The last message says why there is no session yet ("failed to connect
// to ...: connection refused", "authentication failed: EOF").
type zkLogger struct {
	l   *slog.Logger
	mu  sync.Mutex
	msg string
}

func (z *zkLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	z.mu.Lock()
	z.msg = msg
	z.mu.Unlock()
	z.l.Info("zookeeper client: " + msg)
}

func (z *zkLogger) last() string {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.msg == "" {
		return "no answer yet"
	}
	return z.msg
}

// WithDialer sets how connections to ZooKeeper are made (a proxy, a
// particular source address; tests use it to cut a member off).
func WithDialer(d func(network, address string, timeout time.Duration) (net.Conn, error)) ZKOption {
	return func(o *zkOptions) { o.dialer = d }
}
