// Package group is the broker-side group coordinator of Kafka's classic
// consumer group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and
// of KIP-848's consumer protocol (consumer.go), which a live group may move
// between (migrate.go), and the committed offsets of the groups it
// coordinates. It knows nothing of
// sockets or wire formats: package broker decodes requests and calls it.
//
// What the coordinator promises:
//   - A rebalance ends when every member has rejoined, or at the rebalance
//     timeout with the members that did; the others are removed. Each ended
//     rebalance bumps the generation.
//   - The protocol chosen is one every member supports (the most preferred
//     by most members); the first member to have joined leads and assigns.
//   - A member that neither heartbeats, syncs nor commits within its session
//     timeout is removed, and the group rebalances without it.
//   - Requests from stale generations get ILLEGAL_GENERATION, from unknown
//     members UNKNOWN_MEMBER_ID, during a rebalance REBALANCE_IN_PROGRESS,
//     as in Kafka, so standard clients recover on their own.
//   - A commit is acknowledged only once its OffsetStore made it durable.
//
// Membership lives in memory only: after a restart, or when another broker
// becomes a group's coordinator, members are unknown and rejoin, which every
// client does on UNKNOWN_MEMBER_ID. Committed offsets are in the store.
package group

import (
	"crypto/rand"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config tunes a Coordinator. Zero values take Kafka's defaults.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (group.min/max.session.timeout.ms; 6s and 30m).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is how long a new group waits for more members
	// before its first rebalance, each new member restarting the wait up to
	// the rebalance timeout (group.initial.rebalance.delay.ms; 3s). It saves
	// a rebalance per member when a whole application starts at once.
	// Negative: no delay.
	InitialRebalanceDelay time.Duration
	// Tick is how often session and rebalance deadlines are checked
	// (default 100ms): the precision of every timeout.
	Tick time.Duration
	// Owns reports whether this broker coordinates a group (nil: all). Any
	// request for a group it does not own gets NOT_COORDINATOR, and the
	// groups it stops owning are dropped from memory.
	Owns func(group string) bool
	// Logger receives one line per membership change.
	Logger *slog.Logger

	// ConsumerSessionTimeout removes a consumer-protocol member that has
	// not heartbeated for it (group.consumer.session.timeout.ms; 45s).
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is the interval consumer-protocol members
	// are told to heartbeat at (group.consumer.heartbeat.interval.ms; 5s):
	// how soon a member learns of a partition another member released.
	ConsumerHeartbeatInterval time.Duration
	// ConsumerMaxSize bounds the members of one consumer-protocol group
	// (group.consumer.max.size; default 1,000 here, Kafka has no bound).
	ConsumerMaxSize int
	// Topics lists the cluster's topics sorted by name, for the server-side
	// assignors (nil: none, so consumer groups are assigned nothing).
	Topics func() []TopicInfo
	// MigrationPolicy says whether live groups are converted between the
	// classic and the consumer protocols (migrate.go;
	// group.consumer.migration.policy): MigrationBidirectional (default,
	// as Kafka 4), MigrationUpgrade, MigrationDowngrade or
	// MigrationDisabled.
	MigrationPolicy string
}

func (c Config) withDefaults() Config {
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 6 * time.Second
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 30 * time.Minute
	}
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = 3 * time.Second
	}
	if c.Tick <= 0 {
		c.Tick = 100 * time.Millisecond
	}
	if c.Owns == nil {
		c.Owns = func(string) bool { return true }
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = 45 * time.Second
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if c.ConsumerMaxSize <= 0 {
		c.ConsumerMaxSize = 1000
	}
	if c.Topics == nil {
		c.Topics = func() []TopicInfo { return nil }
	}
	if c.MigrationPolicy == "" {
		c.MigrationPolicy = MigrationBidirectional
	}
	return c
}

// Coordinator runs the groups this broker coordinates. Its methods are safe
// for concurrent use; the ones that wait (Join, Sync) return a channel that
// receives exactly one result.
type Coordinator struct {
	cfg   Config
	store OffsetStore
	log   *slog.Logger
	now   func() time.Time // replaced by tests

	mu     sync.Mutex
	groups map[string]*group
	// consumers are the consumer-protocol groups (consumer.go); a name is
	// in at most one of groups and consumers.
	consumers map[string]*cgroup
	emptied   map[string]time.Time // groups left without members or offsets, listed until then (emptied.go)
	closed    bool

	started bool // run is going (not in tests that drive tick themselves)
	stop    chan struct{}
	done    chan struct{}
}

// New starts a coordinator whose committed offsets live in store.
func New(cfg Config, store OffsetStore) *Coordinator {
	c := newCoordinator(cfg, store)
	c.started = true
	go c.run()
	return c
}

// newCoordinator builds a coordinator without its timer, for tests that
// drive time themselves.
func newCoordinator(cfg Config, store OffsetStore) *Coordinator {
	cfg = cfg.withDefaults()
	c := &Coordinator{
		cfg:    cfg,
		store:  store,
		log:    cfg.Logger,
		now:    time.Now,
		groups: map[string]*group{},

		consumers: map[string]*cgroup{},
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	return c
}

// Store is where the coordinator keeps committed offsets.
func (c *Coordinator) Store() OffsetStore { return c.store }

func (c *Coordinator) run() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.tick(c.now())
		}
	}
}

// Close answers every waiting JoinGroup and SyncGroup with
// COORDINATOR_NOT_AVAILABLE (clients look for the coordinator again) and
// refuses requests from then on.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	for name, g := range c.groups {
		g.failWaiters(kerr.CoordinatorNotAvailable)
		delete(c.groups, name)
	}
	clear(c.consumers)
	c.mu.Unlock()
	close(c.stop)
	if c.started {
		<-c.done
	}
}

// tick expires members and pending member ids, ends rebalances whose
// deadline passed, and drops groups that are empty or no longer ours.
func (c *Coordinator) tick(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, g := range c.groups {
		if !c.cfg.Owns(name) {
			c.log.Info("group moved to another coordinator; dropping its members", "group", name, "members", len(g.members))
			g.failWaiters(kerr.NotCoordinator)
			delete(c.groups, name)
			continue
		}
		for id, deadline := range g.pending {
			if now.After(deadline) {
				delete(g.pending, id)
			}
		}
		for _, m := range g.members {
			if m.join != nil || m.sync != nil {
				continue // waiting on us, not the other way round
			}
			if now.Sub(m.lastSeen) > m.sessionTimeout {
				c.log.Info("group member session expired", "group", name, "member", m.id,
					"client", m.clientID, "host", m.clientHost, "session_timeout", m.sessionTimeout)
				c.removeMember(g, m, now, "session timeout of "+m.id)
			}
		}
		if g.state == PreparingRebalance && !now.Before(g.deadline) {
			for _, m := range g.members {
				if m.join == nil {
					c.log.Info("group member did not rejoin within the rebalance timeout; removing it", "group", name, "member", m.id)
					g.deleteMember(m)
				}
			}
			c.completeJoin(g, now)
		}
		if g.state == Empty && len(g.members) == 0 && len(g.pending) == 0 {
			delete(c.groups, name)
			c.markEmptiedLocked(name)
		}
	}
	c.tickConsumers(now)
	c.pruneEmptiedLocked(now)
}

// check applies the checks every group request starts with.
func (c *Coordinator) check(group string) *kerr.Error {
	switch {
	case c.closed:
		return kerr.CoordinatorNotAvailable
	case group == "":
		return kerr.InvalidGroupID
	case !c.cfg.Owns(group):
		return kerr.NotCoordinator
	}
	return nil
}

// newMemberID is Kafka's form, client id then a random suffix, so that an
// operator can tell in DescribeGroups which application a member is.
func newMemberID(clientID string) string {
	return clientID + "-" + rand.Text()
}
