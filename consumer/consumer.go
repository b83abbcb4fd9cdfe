// Package consumer implements the paper's consumer groups: consumers
// coordinate through ZooKeeper alone, with no master, and fetch with kgo
// (franz-go) by direct partition consumption, not Kafka's group protocol.
//
// A Group is one consumer. It registers itself (ephemeral
// consumers/<group>/ids/<id>), watches the broker and consumer registries,
// and on every change runs Algorithm 1: stop fetching and release its
// partitions (committing their offsets first), read both registries, sort
// partitions and consumers, take its contiguous range (see Range), write
// itself as owner (ephemeral consumers/<group>/owners/<topic>/<partition>),
// and fetch from the offsets in the offset registry
// (consumers/<group>/offsets/<topic>/<partition>). The exact paths are in
// package cluster's documentation.
//
// What a caller may rely on:
//
//   - Within a group, each partition has one owner: a consumer delivers
//     records only of partitions whose owner node it holds, and commits
//     only while it holds it. A consumer cut off from ZooKeeper stops
//     delivering after half its session timeout, about when the others may
//     take over. Across groups nothing is shared, so every group gets every
//     message (publish/subscribe); within one group each message goes to one
//     consumer (point-to-point), repeats after failures aside.
//   - Delivery is at-least-once. A record counts as processed once Next is
//     called again (or Close is called), or, with Config.MarkManually, once
//     MarkProcessed covers it; only processed records are committed, by
//     the periodic commit, the release at every rebalance (after
//     Config.OnRevoke) and Close. After a crash, a partition's next owner starts at the last
//     committed offset, so it may repeat records, never skip them.
//   - Next never reports the end of the log: it blocks until data arrives,
//     the context ends, or the group is closed or has failed.
//   - A conflict while claiming (another consumer still owns a partition)
//     releases everything and retries with jittered backoff; after
//     Config.RebalanceRetries conflicts in a row the group fails with an
//     error naming the partition and its owner.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/kgolog"
)

// Start says where a group begins reading a partition for which it has no
// stored offset.
type Start int

const (
	// Smallest starts at the oldest message the broker still keeps, so a new
	// group sees everything retained.
	Smallest Start = iota
	// Largest starts at the end of the log: only messages produced from now
	// on. The offset is resolved when a partition is first claimed and
	// stored at once, so a rebalance before the first commit does not skip
	// the messages produced in between.
	Largest
)

// Config describes one consumer of a group.
type Config struct {
	// ZooKeeper is the cluster's connect string, host:port[,host:port]/chroot.
	ZooKeeper string
	// Group names the consumer group; consumers with the same group share
	// the partitions of their topics.
	Group string
	// Topics are the subscribed topics.
	Topics []string
	// ID identifies this consumer in the registries. Default: the host name,
	// the process id and a random suffix. Ids order the consumers in
	// Algorithm 1; they must be unique within the group.
	ID string
	// Start applies to partitions without a stored offset. Default Smallest.
	Start Start
	// CommitInterval is how often processed offsets are written to ZooKeeper.
	// Default 5s; negative disables periodic commits (Commit and Close still
	// commit).
	CommitInterval time.Duration
	// SessionTimeout is the ZooKeeper session timeout: how long after a crash
	// the others take this consumer's partitions. Default 6s.
	SessionTimeout time.Duration
	// RebalanceRetries bounds the ownership conflicts of one rebalance before
	// the group fails. Default 10.
	RebalanceRetries int
	// RebalanceBackoff is the first wait after a conflict; it doubles per
	// retry up to 2s and is jittered so that consumers do not retry in
	// lockstep. Default 100ms.
	RebalanceBackoff time.Duration
	// Logger receives rebalances, commits failures and fetch errors.
	Logger *slog.Logger
	// ClientOptions are extra kgo options (fetch sizes, TLS, ...). Options
	// that choose what to consume are ours and must not be given.
	ClientOptions []kgo.Opt
	// Listener names the brokers' listener to connect to, which is the
	// security protocol the ClientOptions speak (PLAINTEXT, SSL,
	// SASL_PLAINTEXT, SASL_SSL): a broker's registration lists one address
	// per listener. Default PLAINTEXT.
	Listener string
	// MarkManually leaves marking records processed to the caller: Next no
	// longer counts the record it returned before as processed, and only
	// what MarkProcessed marked is committed. It is for processing that
	// finishes asynchronously or out of order, such as the mirror, which
	// may commit a record only once the target acknowledged its copy.
	MarkManually bool
	// OnAssign, if set, is called after every rebalance that claimed
	// partitions, with those partitions, before Next delivers any of their
	// records. It runs inside the rebalance: it must be quick and must not
	// call Commit or Close.
	OnAssign func(assigned map[string][]int32)
	// OnRevoke, if set, is called whenever this consumer is about to give
	// its partitions up: at every rebalance (Algorithm 1 releases all of
	// them before claiming again) and on Close. Next has stopped delivering
	// them by then, and their offsets are committed right after it returns,
	// so it is where to wait for work in flight and MarkProcessed it. ctx
	// ends after SessionTimeout, or when the group is closed during a
	// rebalance; the other consumers wait for the release meanwhile. It
	// must not call Commit or Close.
	OnRevoke func(ctx context.Context, revoked map[string][]int32)

	zkOptions []cluster.ZKOption // for tests that cut the link to ZooKeeper
}

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("consumer group member closed")

// Group is one consumer of a consumer group. Next is for one goroutine at a
// time; the other methods are safe for concurrent use.
type Group struct {
	cfg    Config
	id     string
	s      *cluster.ZKSession
	paths  cluster.ZKPaths
	watch  *cluster.ZKWatch
	client *kgo.Client
	log    *slog.Logger

	mu       sync.Mutex
	owned    map[topicPartition]*position
	buf      []*kgo.Record
	last     *kgo.Record // returned by the latest Next, processed at the next call
	lastPos  *position
	err      error // set when the group failed; Next returns it
	seeds    []string
	paused   int
	resumed  chan struct{}
	polling  chan struct{} // closed when the in-flight poll ends; nil if none
	cancelFn context.CancelFunc
	stats    Stats

	commitMu  sync.Mutex                   // orders commits with releases: never commit a released partition
	stale     map[topicPartition]*position // dropped claims whose owner nodes may remain; under commitMu
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

type topicPartition struct {
	topic     string
	partition int32
}

// position is what this consumer knows of one partition it owns.
type position struct {
	next      int64 // offset of the next record to deliver; -1 until the first one
	done      int64 // first offset not yet processed: what a commit writes; -1 if none
	committed int64 // what the offset registry holds; -1 if nothing
	session   int64 // the ZooKeeper session whose owner node we hold
}

// Stats counts rebalances, for tests and monitoring.
type Stats struct {
	Rebalances   int // completed rebalances
	LastAttempts int // attempts the latest rebalance needed (1 = no conflict)
	MaxAttempts  int // the most attempts any rebalance needed
}

// Join registers a consumer in its group, waits for the first rebalance and
// returns with its partitions claimed. It waits for brokers to appear in the
// broker registry as long as ctx allows.
func Join(ctx context.Context, cfg Config) (*Group, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("group", cfg.Group, "consumer", cfg.ID)
	s, err := cluster.DialZooKeeper(ctx, cfg.ZooKeeper, log,
		append([]cluster.ZKOption{cluster.WithSessionTimeout(cfg.SessionTimeout)}, cfg.zkOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("consumer group %s: %w", cfg.Group, err)
	}
	g := &Group{
		cfg:   cfg,
		id:    cfg.ID,
		s:     s,
		paths: s.Paths,
		watch: cluster.NewZKWatch(s.Conn),
		log:   log,
		owned: map[topicPartition]*position{},
		stop:  make(chan struct{}),
	}
	fail := func(err error) (*Group, error) {
		if g.client != nil {
			g.client.Close()
		}
		s.Close()
		return nil, fmt.Errorf("consumer group %s: %w", cfg.Group, err)
	}
	seeds, err := g.waitForBrokers(ctx)
	if err != nil {
		return fail(err)
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeResetOffset(cfg.Start.offset()),
		kgo.WithLogger(kgolog.New(log)),
	}, cfg.ClientOptions...)
	if g.client, err = kgo.NewClient(opts...); err != nil {
		return fail(fmt.Errorf("kafka client: %w", err))
	}
	g.seeds = seeds
	if err := g.register(ctx); err != nil {
		return fail(err)
	}
	if err := g.rebalance(ctx); err != nil {
		return fail(err)
	}
	g.wg.Add(1)
	go g.followRegistries()
	if cfg.CommitInterval > 0 {
		g.wg.Add(1)
		go g.commitPeriodically()
	}
	return g, nil
}

func (c Config) withDefaults() (Config, error) {
	if c.ZooKeeper == "" {
		return c, errors.New("consumer: Config.ZooKeeper is empty; give the cluster's host:port/chroot")
	}
	if err := cluster.ValidateName("group", c.Group); err != nil {
		return c, fmt.Errorf("consumer: %w", err)
	}
	if len(c.Topics) == 0 {
		return c, fmt.Errorf("consumer group %s: no topics to consume", c.Group)
	}
	for _, t := range c.Topics {
		if err := cluster.ValidateName("topic", t); err != nil {
			return c, fmt.Errorf("consumer group %s: %w", c.Group, err)
		}
	}
	c.Topics = slices.Compact(slices.Sorted(slices.Values(c.Topics)))
	if c.ID == "" {
		c.ID = defaultID()
	}
	if err := cluster.ValidateName("consumer id", c.ID); err != nil {
		return c, fmt.Errorf("consumer group %s: %w", c.Group, err)
	}
	if c.Start != Smallest && c.Start != Largest {
		return c, fmt.Errorf("consumer group %s: unknown Start %d", c.Group, c.Start)
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = 5 * time.Second
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = cluster.DefaultSessionTimeout
	}
	if c.RebalanceRetries <= 0 {
		c.RebalanceRetries = 10
	}
	if c.RebalanceBackoff <= 0 {
		c.RebalanceBackoff = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

func (s Start) offset() kgo.Offset {
	if s == Largest {
		return kgo.NewOffset().AtEnd()
	}
	return kgo.NewOffset().AtStart()
}

// defaultID is host-pid-random: readable in the registry, unique even for
// two consumers of one process.
func defaultID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, host)
	if host == "" {
		host = "consumer"
	}
	return fmt.Sprintf("%s-%d-%08x", host, os.Getpid(), rand.Uint32())
}

// ID is this consumer's id in the registries.
func (g *Group) ID() string { return g.id }

// Assigned lists the partitions this consumer owns, by topic, sorted.
func (g *Group) Assigned() map[string][]int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string][]int32{}
	for tp := range g.owned {
		out[tp.topic] = append(out[tp.topic], tp.partition)
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	}
	return out
}

// Stats reports rebalance counts.
func (g *Group) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// MarkProcessed marks the records of a partition below nextOffset as
// processed, so that the next commit writes nextOffset. It is for
// Config.MarkManually but works without it too. Marks never move an
// offset back, and are ignored for partitions this consumer does not own
// (any more); the partitions may be marked in any order.
func (g *Group) MarkProcessed(topic string, partition int32, nextOffset int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if pos := g.owned[topicPartition{topic, partition}]; pos != nil {
		pos.done = max(pos.done, nextOffset)
	}
}

// Committed returns the offset the offset registry holds for a partition
// this consumer owns, as far as it knows (it is the only writer while it
// owns it), or -1 if nothing is stored or the partition is not owned.
func (g *Group) Committed(topic string, partition int32) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if pos := g.owned[topicPartition{topic, partition}]; pos != nil {
		return pos.committed
	}
	return -1
}

// Records iterates over Next: it yields every record and, when Next fails
// (the context ended, the group was closed or failed), that error once,
// then stops. It never stops for lack of data.
func (g *Group) Records(ctx context.Context) iter.Seq2[*kgo.Record, error] {
	return func(yield func(*kgo.Record, error) bool) {
		for {
			rec, err := g.Next(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(rec, nil) {
				return
			}
		}
	}
}

// Close commits what was processed (the record returned by the last Next
// counts as processed, unless Config.MarkManually), after calling
// Config.OnRevoke, and leaves the group: the session ends, so the other
// consumers take this one's partitions at once instead of after the session
// timeout. Calling Next afterwards returns ErrClosed.
func (g *Group) Close() error {
	g.closeOnce.Do(func() {
		close(g.stop)
		g.pause()
		g.wg.Wait()
		g.mu.Lock()
		g.markProcessedLocked()
		g.mu.Unlock()
		g.revoke(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 2*g.cfg.SessionTimeout)
		g.closeErr = g.Commit(ctx)
		cancel()
		g.mu.Lock()
		if g.err == nil {
			g.err = ErrClosed
		}
		g.mu.Unlock()
		g.resume()
		g.client.Close()
		g.s.Close()
		g.log.Info("left the consumer group")
	})
	return g.closeErr
}

// failed stops the group after an error it cannot recover from; Next
// returns err from now on. It ends the session so that the rest of the
// group does not wait for partitions this consumer would never claim.
func (g *Group) failed(err error) {
	g.log.Error("consumer stopped", "err", err)
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.mu.Unlock()
	g.client.Close()
	g.s.Close()
}
