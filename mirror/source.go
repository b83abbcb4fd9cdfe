package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/consumer"
)

// source copies one live cluster. Three goroutines work on it: manage
// (topics, group membership, which partitions are ours), poll (fetch and
// produce) and commitLoop (acknowledged offsets to ZooKeeper).
//
// Why the consumer group does not fetch for us: consumer.Group counts a
// record as processed when Next is called again, and commits processed
// offsets on its own at every rebalance and on Close. A mirror that
// produces asynchronously would have offsets committed before the target
// acknowledged them, and a crash right after a rebalance would lose those
// records. So the mirror uses the group only for what it does well, the
// paper's membership and ownership (Algorithm 1, owner nodes), never calls
// Next (the group's own offsets then never move, so it never commits), and
// fetches the partitions the group assigned it with its own client from the
// same offset registry, writing it only after acks=all. Should the
// ownership change before the mirror notices (it polls Group.Assigned every
// ownershipPoll), two processes copy a partition for that moment: each
// commits only offsets below which it has everything in the target, so the
// registry can only ever hold such an offset. The cost is duplicates, never
// loss.
type source struct {
	Source
	cfg     *compiled
	log     *slog.Logger
	tgt     *target
	schemas *schemaMap // nil: ids are copied unchanged
	fail    func(error)
	lastAck *atomic.Int64 // unix nanoseconds of the target's latest acknowledgement, shared by all sources

	zk    *cluster.ZKSession
	watch *cluster.ZKWatch
	fetch *kgo.Client
	adm   *kadm.Client

	// Owned by the manage goroutine.
	topics  []string // the group's subscription
	missing time.Time

	lastWarn time.Time // of "cannot start copying partition", to not log it every poll

	mu    sync.RWMutex
	group *consumer.Group
	parts map[topicPartition]*partition
}

type topicPartition struct {
	topic     string
	partition int32
}

const (
	ownershipPoll   = 100 * time.Millisecond
	watermarkPoll   = 5 * time.Second
	topicsRecheck   = 10 * time.Second
	groupCheckEvery = time.Second
)

// connect opens the source's ZooKeeper session and its fetch client, and
// checks that a broker is registered, within Config.ConnectTimeout: a
// source that cannot be reached at start is a configuration error.
func (s *source) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	var err error
	s.zk, err = cluster.DialZooKeeper(ctx, s.ZooKeeper, s.log, cluster.WithSessionTimeout(s.cfg.SessionTimeout))
	if err != nil {
		return fmt.Errorf("source %s: cannot reach ZooKeeper %s within %v: %w", s.Name, s.ZooKeeper, s.cfg.ConnectTimeout, err)
	}
	s.watch = cluster.NewZKWatch(s.zk.Conn)
	seeds, err := s.brokers(ctx)
	if err != nil {
		s.zk.Close()
		return fmt.Errorf("source %s: %w", s.Name, err)
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		// Where the stored offset is gone (retention deleted it) resume at
		// the oldest record kept; the copy loop logs the gap.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.WithLogger(kgoLogger{s.log}),
	}, s.cfg.FetchOptions...)
	if s.fetch, err = kgo.NewClient(opts...); err != nil {
		s.zk.Close()
		return fmt.Errorf("source %s: fetch client: %w", s.Name, err)
	}
	s.adm = kadm.NewClient(s.fetch)
	s.parts = map[topicPartition]*partition{}
	return nil
}

// brokers waits for the broker registry to list at least one broker.
func (s *source) brokers(ctx context.Context) ([]string, error) {
	for {
		ids, err := s.watch.Children(s.zk.Paths.BrokerIDs())
		if err != nil {
			return nil, fmt.Errorf("reading the broker registry: %w", err)
		}
		var seeds []string
		for _, id := range ids {
			data, _, err := s.zk.Conn.Get(s.zk.Paths.BrokerIDs() + "/" + id)
			if err != nil {
				continue // gone since the listing
			}
			if b, err := cluster.DecodeBrokerNode(data); err == nil {
				seeds = append(seeds, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
			}
		}
		if len(seeds) > 0 {
			return seeds, nil
		}
		select {
		case <-s.watch.Fired():
		case <-ctx.Done():
			return nil, fmt.Errorf("no broker is registered under %s in ZooKeeper %s (is the cluster running, and is the chroot right?)",
				s.zk.Paths.BrokerIDs(), s.ZooKeeper)
		}
	}
}

// manage keeps the group's subscription equal to the source's matching
// topics and the fetched partitions equal to the group's assignment, until
// ctx ends or something fatal happens.
func (s *source) manage(ctx context.Context) {
	tick := time.NewTicker(ownershipPoll)
	defer tick.Stop()
	var lastTopics, lastWatermarks, lastGroupCheck time.Time
	for {
		now := time.Now()
		if now.Sub(lastTopics) >= topicsRecheck {
			lastTopics = now
			if err := s.followTopics(ctx); err != nil {
				s.stop(ctx, err)
				return
			}
		}
		if now.Sub(lastGroupCheck) >= groupCheckEvery {
			lastGroupCheck = now
			s.checkGroup(ctx)
		}
		if err := s.syncOwnership(ctx); err != nil {
			s.stop(ctx, err)
			return
		}
		if now.Sub(lastWatermarks) >= watermarkPoll {
			lastWatermarks = now
			s.refreshWatermarks(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.watch.Fired():
			lastTopics = time.Time{} // the topic list (or the broker list) changed
		case <-tick.C:
		}
	}
}

// stop ends the mirror with err unless the mirror is stopping anyway.
func (s *source) stop(ctx context.Context, err error) {
	if ctx.Err() == nil {
		s.fail(err)
	}
}

// startPartition prepares copying one newly assigned partition: the target
// topic exists, the placement is known, and the start is the committed
// offset (or the configured start for a partition never committed).
func (s *source) startPartition(ctx context.Context, tp topicPartition, counts map[string]int32) (*partition, error) {
	n, ok := counts[tp.topic]
	if !ok {
		data, _, err := s.zk.Conn.Get(s.zk.Paths.Topic(tp.topic))
		if err != nil {
			return nil, fmt.Errorf("reading topic %s: %w", tp.topic, err)
		}
		node, err := cluster.DecodeTopicNode(data)
		if err != nil {
			return nil, fmt.Errorf("topic %s: %w", tp.topic, err)
		}
		n = int32(len(node.Leaders))
		counts[tp.topic] = n
	}
	targetN, err := s.tgt.ensureTopic(ctx, s.Name, tp.topic, n)
	if err != nil {
		return nil, err
	}
	committed, err := s.readOffset(tp)
	if err != nil {
		return nil, err
	}
	start := committed
	if start < 0 {
		start, err = s.logEdge(ctx, tp)
		if err != nil {
			return nil, err
		}
	}
	part := newPartition(s.Name, tp.topic, tp.partition, start, committed)
	part.targetN = targetN
	if n == targetN {
		part.target = tp.partition
	}
	return part, nil
}

// logEdge is where a partition never committed starts: its oldest or its
// next offset, as configured. Resolving it here, not leaving it to the
// fetcher, is what lets the copy loop insist on contiguous offsets.
func (s *source) logEdge(ctx context.Context, tp topicPartition) (int64, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list := s.adm.ListStartOffsets
	if s.cfg.Start == consumer.Largest {
		list = s.adm.ListEndOffsets
	}
	offsets, err := list(lctx, tp.topic)
	if err != nil {
		return 0, fmt.Errorf("listing offsets of %s: %w", tp.topic, err)
	}
	o, ok := offsets.Lookup(tp.topic, tp.partition)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("listing offsets of %s/%d: %v", tp.topic, tp.partition, o.Err)
	}
	return o.Offset, nil
}

// readOffset returns the committed offset of a partition, -1 if none.
func (s *source) readOffset(tp topicPartition) (int64, error) {
	path := s.zk.Paths.Offset(s.cfg.Group, tp.topic, tp.partition)
	data, _, err := s.zk.Conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("reading %s: %w", path, err)
	}
	off, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil || off < 0 {
		return -1, &fatalError{fmt.Errorf("source %s: offset registry %s holds %q, not an offset; fix or delete the node", s.Name, path, data)}
	}
	return off, nil
}

// refreshWatermarks reads the high watermarks of the owned partitions, so
// the lag is right also while nothing is fetched (target down, idle topic).
func (s *source) refreshWatermarks(ctx context.Context) {
	s.mu.RLock()
	topics := map[string]bool{}
	for tp := range s.parts {
		topics[tp.topic] = true
	}
	s.mu.RUnlock()
	if len(topics) == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := s.adm.ListEndOffsets(lctx, slices.Collect(maps.Keys(topics))...)
	if err != nil {
		return // lag stays at its last value; fetch errors are logged elsewhere
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			return
		}
		if part := s.lookup(o.Topic, o.Partition); part != nil {
			part.mu.Lock()
			part.hwm = max(part.hwm, o.Offset)
			part.mu.Unlock()
		}
	})
}

func (s *source) lookup(topic string, p int32) *partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.parts[topicPartition{topic, p}]
}

// partitions returns the partitions being copied now.
func (s *source) partitions() []*partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*partition, 0, len(s.parts))
	for _, p := range s.parts {
		out = append(out, p)
	}
	return out
}

// close commits what the target acknowledged and leaves the group. The
// caller has stopped the goroutines and flushed the target.
func (s *source) close() {
	if s.zk == nil {
		return
	}
	s.commit()
	s.leave()
	s.fetch.Close()
	s.zk.Close()
}

// kgoLogger passes kgo's warnings and errors to slog.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	l := slog.LevelWarn
	if level == kgo.LogLevelError {
		l = slog.LevelError
	}
	k.l.Log(context.Background(), l, "kafka client: "+msg, keyvals...)
}
