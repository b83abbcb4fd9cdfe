package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ZooKeeper is the metadata of a broker that is a member of a cluster. The
// broker registers itself under an ephemeral node, topic assignments are
// persistent nodes, and watches keep an in-memory view current, so reads
// (Brokers, Topic, Topics) never wait for ZooKeeper.
//
// The view is eventually consistent across brokers (each learns a change
// from its own watch) but read-your-writes for the broker that made the
// change: CreateTopic and DeleteTopic return after the local view shows it.
type ZooKeeper struct {
	self      Broker
	clusterID string // /cluster/id, read or created at join
	s         *ZKSession
	log       *slog.Logger
	watch     *ZKWatch

	mu      sync.Mutex
	brokers []Broker
	topics  map[string]Topic
	changed chan struct{}

	controller atomic.Int32  // the elected controller's id, -1 unknown (controller.go)
	rebalance  time.Duration // automatic preferred-leader election period, 0: off (preferred.go)
	unclean    atomic.Bool   // unclean.leader.election.enable of topics that do not set it (controller.go)
	reelect    chan struct{} // wakes the controller when the unclean default changes

	registered atomic.Bool  // listed in /brokers/ids as far as run knows (Registered)
	epoch      atomic.Int64 // broker epoch: czxid of the registration node last created (brokerepochs.go)

	refreshMu sync.Mutex         // serializes refreshes so views publish in read order
	published map[string][]int32 // own partitions last written to the broker node
	// unreadable holds the version of each undecodable topic node last
	// warned of (under unreadableMu; a refresh reads topics in parallel):
	// one warning per write, not per refresh.
	unreadableMu sync.Mutex
	unreadable   map[string]int32

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

var _ Metadata = (*ZooKeeper)(nil)

// DefaultBrokerSessionTimeout is a broker's ZooKeeper session timeout
// unless WithSessionTimeout sets another (tributary broker
// --zookeeper-session-timeout): how long after a broker's last contact
// ZooKeeper removes its registration, which is when the controller moves
// its leaderships. ZooKeeper ends a session at the first tick of its clock
// (tickTime, 2 s by default) past the timeout, so a session of 6 s ended
// 6.4-8.0 s after a kill -9, and with the controller's work every leader
// was back 7-10 s after it (3,000 partitions); at 4 s, ZooKeeper's least
// at its default tick (2 ticks), the registration goes 4-6 s after the
// last ping and the leaders were back within 7 s. Shorter needs a shorter
// tick; the client still tolerates 2.7 s of silence on its connection, and
// the broker counts its session lost only after 2 s more without one.
const DefaultBrokerSessionTimeout = 4 * time.Second

// JoinZooKeeper connects to ZooKeeper (connect is host:port[,host:port]/chroot),
// registers self in the broker registry and loads the cluster view. If self's
// id is still registered by an earlier run that crashed, it waits for that
// session to expire (up to ctx, or three session timeouts and at least 20s);
// a live broker with the same id is an error. ZooKeeper being unreachable,
// or dropping the connection while the broker joins (as one that is still
// starting does), only delays the join, with a log line per retry, until
// ctx ends; then the error names the connect string.
func JoinZooKeeper(ctx context.Context, connect string, self Broker, logger *slog.Logger, opts ...ZKOption) (*ZooKeeper, error) {
	if self.ID < 0 || self.Host == "" || self.Port <= 0 {
		return nil, fmt.Errorf("joining the cluster: broker needs an id >= 0, a host and a port; got id=%d host=%q port=%d", self.ID, self.Host, self.Port)
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("broker", self.ID)
	s, err := DialZooKeeper(ctx, connect, logger, append([]ZKOption{WithSessionTimeout(DefaultBrokerSessionTimeout)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("joining the cluster: %w", err)
	}
	z := &ZooKeeper{
		self:    self,
		s:       s,
		log:     logger,
		watch:   NewCachingZKWatch(s.Conn),
		topics:  map[string]Topic{},
		changed: make(chan struct{}),
		reelect: make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	z.controller.Store(-1)
	z.rebalance = DefaultLeaderRebalance
	o := zkOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.rebalance != nil {
		z.rebalance = max(*o.rebalance, 0)
	}
	err = s.retryLostContact(ctx, "joining the cluster", func() error {
		if err := z.register(ctx); err != nil {
			return err
		}
		if z.clusterID, err = z.ensureClusterID(); err != nil {
			return err
		}
		if err := z.refresh(); err != nil {
			return fmt.Errorf("reading the registries: %w", err)
		}
		return nil
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("joining the cluster at zookeeper %s: %w", connect, err)
	}
	z.registered.Store(true)
	z.wg.Add(2)
	go z.run()
	go z.runController()
	z.log.Info("joined the cluster", "zookeeper", connect, "host", self.Host, "port", self.Port, "brokers", len(z.Brokers()), "topics", len(z.Topics()))
	return z, nil
}

func (z *ZooKeeper) register(ctx context.Context) error {
	wait := max(3*z.s.Timeout, 20*time.Second)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	z.refreshMu.Lock()
	node := BrokerNode{Broker: z.self, Topics: z.published}
	z.refreshMu.Unlock()
	data, _ := json.Marshal(node)
	path := z.s.Paths.Broker(z.self.ID)
	if err := z.s.CreateEphemeral(ctx, path, data); err != nil {
		return fmt.Errorf("registering broker %d: %w", z.self.ID, err)
	}
	epoch, err := z.s.registrationEpoch(path)
	if err != nil {
		return fmt.Errorf("registering broker %d: %w", z.self.ID, err)
	}
	if old := z.epoch.Swap(epoch); old != epoch {
		z.log.Info("registered in the broker registry", "broker_epoch", epoch, "previous_broker_epoch", old)
	}
	return nil
}

// run follows the registries until Close: re-reads on every watch event,
// re-registers after a session expiry, and retries with backoff while
// ZooKeeper is unreachable.
//
// Whether this broker is registered is checked against what it reads, not
// only inferred from session events: after every read of the registry that
// does not list it (its node went with a session, or someone deleted it),
// it registers again, and keeps trying, logging why, until it is listed.
// A broker that runs but is missing from the registry is invisible to
// clients and to the controller, so that state must not last.
func (z *ZooKeeper) run() {
	defer z.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-z.stop
		cancel()
	}()
	registered := true
	backoff := 100 * time.Millisecond
	var retry <-chan time.Time
	for {
		select {
		case <-z.stop:
			return
		case <-z.watch.Fired():
		case <-z.s.Expired:
			// Renewed follows once there is a session to register in.
			z.registered.Store(false)
			registered = false
			continue
		case <-z.s.Renewed: // registered is false since Expired
		case <-retry:
		}
		err := error(nil)
		if !registered {
			if err = z.register(ctx); err == nil {
				registered = true
				z.log.Info("registered again in the broker registry", "path", z.s.Paths.Broker(z.self.ID))
			} else {
				err = fmt.Errorf("not in the broker registry: %w", err)
			}
		}
		if err == nil {
			err = z.refreshView()
		}
		if err == nil && !z.listed() {
			// The read that just happened does not show this broker:
			// its node is gone while the session lives on.
			z.log.Warn("this broker's registry node is gone; registering again", "path", z.s.Paths.Broker(z.self.ID))
			if err = z.register(ctx); err != nil {
				registered = false
				err = fmt.Errorf("not in the broker registry: %w", err)
			}
		}
		z.registered.Store(registered)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			z.log.Warn("cluster view may be stale or this broker unregistered; retrying", "zookeeper", z.s.Connect, "err", err, "in", backoff)
			retry = time.After(backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		retry, backoff = nil, 100*time.Millisecond
	}
}

// listed reports whether the current view holds this broker's registration.
func (z *ZooKeeper) listed() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, b := range z.brokers {
		if b.ID == z.self.ID {
			return true
		}
	}
	return false
}

// Registered returns nil while this broker is listed in the broker
// registry, and otherwise why not: the readiness check of a broker process,
// because a broker missing from the registry gets no clients and no
// partitions even though it runs.
func (z *ZooKeeper) Registered() error {
	if z.registered.Load() {
		return nil
	}
	return fmt.Errorf("broker %d is not registered at %s on zookeeper %s (yet); it keeps trying", z.self.ID, z.s.Paths.Broker(z.self.ID), z.s.Connect)
}

func (z *ZooKeeper) Self() Broker { return z.self }

// Session lends the broker's ZooKeeper session to parts of the broker that
// keep state in ZooKeeper too (the group coordinator's offsets). It remains
// ZooKeeper's: do not close it, and do not read its Expired and Renewed
// channels, which drive this broker's re-registration.
func (z *ZooKeeper) Session() *ZKSession { return z.s }

// Close leaves the cluster: ending the session removes this broker's
// registry node at once, so the others stop listing it immediately rather
// than after the session timeout.
func (z *ZooKeeper) Close() error {
	z.closeOnce.Do(func() {
		close(z.stop)
		z.s.Close()
		z.wg.Wait()
		z.log.Info("left the cluster")
	})
	return nil
}
