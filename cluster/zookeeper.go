package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
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
	s, err := DialZooKeeper(ctx, connect, logger, opts...)
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

// refreshView reads both registries (through the watch, which answers
// what did not change since its last read), publishes the view if it
// changed, and keeps this broker's own node listing the partitions it
// stores.
func (z *ZooKeeper) refreshView() error {
	z.refreshMu.Lock()
	defer z.refreshMu.Unlock()
	brokers, err := z.readBrokers(z.watch.Children)
	if err != nil {
		return err
	}
	names, err := z.watch.Children(z.s.Paths.Topics())
	if err != nil {
		return fmt.Errorf("listing %s: %w", z.s.Paths.Topics(), err)
	}
	read := make([]Topic, len(names))
	found := make([]bool, len(names))
	// Pipelined (zkmany.go): thousands of topics, each a few nodes.
	if err := inParallel(len(names), func(i int) (err error) {
		read[i], found[i], err = z.readTopic(names[i])
		return err
	}); err != nil {
		return err
	}
	topics := make(map[string]Topic, len(names))
	for i, name := range names {
		if found[i] {
			topics[name] = read[i]
		}
	}

	z.mu.Lock()
	if !reflect.DeepEqual(brokers, z.brokers) || !reflect.DeepEqual(topics, z.topics) {
		z.brokers, z.topics = brokers, topics
		close(z.changed)
		z.changed = make(chan struct{})
	}
	z.mu.Unlock()

	own := map[string][]int32{}
	for name, t := range topics {
		for p, leader := range t.Leaders {
			if leader == z.self.ID {
				own[name] = append(own[name], int32(p))
			}
		}
	}
	if !reflect.DeepEqual(own, z.published) {
		data, _ := json.Marshal(BrokerNode{Broker: z.self, Topics: own})
		_, err := z.s.Conn.Set(z.s.Paths.Broker(z.self.ID), data, -1)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			// Not registered (session expired): register writes it.
		case err != nil:
			return fmt.Errorf("updating this broker's registry node: %w", err)
		}
		z.published = own
	}
	return nil
}

// readBrokers lists the live brokers, sorted by id. A node that vanishes
// between the listing and the read is a broker that just left.
func (z *ZooKeeper) readBrokers(children func(string) ([]string, error)) ([]Broker, error) {
	ids, err := children(z.s.Paths.BrokerIDs())
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", z.s.Paths.BrokerIDs(), err)
	}
	brokers := make([]Broker, 0, len(ids))
	for _, id := range ids {
		data, _, err := z.s.Conn.Get(z.s.Paths.BrokerIDs() + "/" + id)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading broker %s: %w", id, err)
		}
		n, err := DecodeBrokerNode(data)
		if err != nil {
			z.log.Warn("ignoring unreadable broker registry node", "id", id, "err", err)
			continue
		}
		if want, _ := strconv.Atoi(id); int32(want) != n.ID {
			z.log.Warn("ignoring broker registry node whose id does not match its path", "path_id", id, "node_id", n.ID)
			continue
		}
		brokers = append(brokers, n.Broker)
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].ID < brokers[j].ID })
	return brokers, nil
}

// readTopic reads a topic's assignment and its configs (topicconfigs.go),
// watching both so that partition growth and config changes made through
// any broker reach this one.
func (z *ZooKeeper) readTopic(name string) (Topic, bool, error) {
	path := z.s.Paths.Topic(name)
	data, version, ok, err := z.watch.Get(path)
	if err != nil {
		return Topic{}, false, fmt.Errorf("reading topic %s: %w", name, err)
	}
	if !ok {
		return Topic{}, false, nil
	}
	n, err := DecodeTopicNode(data)
	if err != nil {
		// Left out of the view, the topic is neither served nor moved by
		// the controller, and its data stays: brokers delete a copy only
		// when ZooKeeper confirms it (TopicDeleted, AssignedReplicas).
		z.unreadableMu.Lock()
		v, warned := z.unreadable[path]
		if !warned || v != version {
			if z.unreadable == nil {
				z.unreadable = map[string]int32{}
			}
			z.unreadable[path] = version
		}
		z.unreadableMu.Unlock()
		if !warned || v != version {
			z.log.Warn("ignoring unreadable topic assignment", "topic", name, "path", path, "err", err)
		}
		return Topic{}, false, nil
	}
	if n.ID.IsZero() {
		n = z.assignTopicID(name, n, version)
	}
	t := Topic{Name: name, ID: n.ID, Leaders: n.Leaders, Replicas: n.Replicas, Configs: n.Configs, Reassigning: n.reassignments()}
	if t.Replicated() {
		if err := z.readStates(&t); err != nil {
			return Topic{}, false, err
		}
	}
	if configs, ok, err := z.readTopicConfigs(name); err != nil {
		return Topic{}, false, err
	} else if ok {
		t.Configs = configs
	}
	return t, true, nil
}

func (z *ZooKeeper) Self() Broker { return z.self }

// Session lends the broker's ZooKeeper session to parts of the broker that
// keep state in ZooKeeper too (the group coordinator's offsets). It remains
// ZooKeeper's: do not close it, and do not read its Expired and Renewed
// channels, which drive this broker's re-registration.
func (z *ZooKeeper) Session() *ZKSession { return z.s }

func (z *ZooKeeper) Brokers() []Broker {
	z.mu.Lock()
	defer z.mu.Unlock()
	return append([]Broker(nil), z.brokers...)
}

func (z *ZooKeeper) Topic(name string) (Topic, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	t, ok := z.topics[name]
	return t, ok
}

func (z *ZooKeeper) Topics() []Topic {
	z.mu.Lock()
	defer z.mu.Unlock()
	list := make([]Topic, 0, len(z.topics))
	for _, t := range z.topics {
		list = append(list, t)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list
}

// CreateTopic spreads the partitions over the brokers alive right now (read
// from ZooKeeper, not the possibly older view) and stores the assignment.
// Creating the node is atomic, so of two brokers creating the same topic at
// once exactly one succeeds and the other gets ErrTopicExists.
func (z *ZooKeeper) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (Topic, error) {
	if err := ValidateName("topic", name); err != nil {
		return Topic{}, err
	}
	if partitions < 1 {
		return Topic{}, fmt.Errorf("topic %s: partition count must be at least 1, got %d", name, partitions)
	}
	if err := ctx.Err(); err != nil {
		return Topic{}, err
	}
	brokers, err := z.readBrokers(func(p string) ([]string, error) {
		kids, _, err := z.s.Conn.Children(p)
		return kids, err
	})
	if err != nil {
		return Topic{}, fmt.Errorf("creating topic %s: %w", name, err)
	}
	leaders, err := Spread(name, partitions, brokers)
	if err != nil {
		return Topic{}, fmt.Errorf("creating topic %s: %w", name, err)
	}
	id := NewTopicID()
	data, _ := json.Marshal(TopicNode{Version: 1, ID: id, Leaders: leaders, Configs: configs})
	_, err = z.s.Conn.Create(z.s.Paths.Topic(name), data, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return Topic{}, ErrTopicExists
	}
	if err != nil {
		return Topic{}, fmt.Errorf("creating topic %s in zookeeper: %w", name, err)
	}
	t := Topic{Name: name, ID: id, Leaders: leaders, Configs: configs}
	if err := z.refresh(); err != nil {
		z.log.Warn("topic created but the local view is not refreshed yet", "topic", name, "err", err)
	}
	z.log.Info("created topic", "topic", name, "partitions", partitions, "brokers", len(brokers))
	return t, nil
}

// DeleteTopic removes the assignment. Brokers drop the partitions' data on
// their own when they see the topic gone.
func (z *ZooKeeper) DeleteTopic(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ValidateName("topic", name) != nil {
		return ErrUnknownTopic
	}
	z.deleteStates(name)
	err := z.s.Conn.Delete(z.s.Paths.Topic(name), -1)
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrInvalidPath) {
		return ErrUnknownTopic
	}
	if err != nil {
		return fmt.Errorf("deleting topic %s in zookeeper: %w", name, err)
	}
	if err := z.s.Conn.Delete(z.s.Paths.TopicConfig(name), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		z.log.Warn("topic deleted but its configs node remains; a new topic of that name would inherit them", "topic", name, "err", err)
	}
	if err := z.refresh(); err != nil {
		z.log.Warn("topic deleted but the local view is not refreshed yet", "topic", name, "err", err)
	}
	z.log.Info("deleted topic", "topic", name)
	return nil
}

func (z *ZooKeeper) Changed() <-chan struct{} {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.changed
}

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
