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
	"github.com/tributary-io/tributary/internal/kgolog"
)

// source copies one live cluster. Two goroutines work on it: manage
// (topics, group membership, watermarks) and consume (records from the
// group to the target producer); the producer's callbacks mark what the
// target acknowledged.
//
// The embedded consumer group does the paper's membership, ownership and
// fetching, and commits the source offsets. It runs with MarkManually: a
// record counts as processed only once the target acknowledged its copy
// with acks=all (acked marks the highest offset below which everything
// is acknowledged), so every commit the group makes (periodic, at a
// rebalance, on leaving) is one below which the target has everything.
// Before a rebalance releases partitions, revoked waits for the copies in
// flight and marks them, so that the next owner does not repeat them.
type source struct {
	Source
	cfg     *compiled
	log     *slog.Logger
	tgt     *target
	schemas *schemaMap // nil: ids are copied unchanged
	fail    func(error)
	lastAck *atomic.Int64 // unix nanoseconds of the target's latest acknowledgement, shared by all sources
	events  *events       // the Mirror's event metrics

	zk    *cluster.ZKSession
	watch *cluster.ZKWatch
	admin *kgo.Client // offsets and watermarks; the group fetches
	adm   *kadm.Client

	// Owned by the manage goroutine.
	topics  []string // the group's subscription
	missing time.Time

	// Owned by the consume goroutine.
	counts map[string]int32 // partition count of each source topic seen

	mu      sync.RWMutex
	group   *consumer.Group
	parts   map[topicPartition]*partition
	retired map[topicPartition]*partition // revoked, until the group claims again
}

type topicPartition struct {
	topic     string
	partition int32
}

const (
	watermarkPoll   = 5 * time.Second
	topicsRecheck   = 10 * time.Second
	groupCheckEvery = time.Second
)

// connect opens the source's ZooKeeper session and its admin client, and
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
		kgo.WithLogger(kgolog.New(s.log)),
	}, s.cfg.FetchOptions...)
	if s.admin, err = kgo.NewClient(opts...); err != nil {
		s.zk.Close()
		return fmt.Errorf("source %s: client: %w", s.Name, err)
	}
	s.adm = kadm.NewClient(s.admin)
	s.parts = map[topicPartition]*partition{}
	s.counts = map[string]int32{}
	return nil
}

// brokers waits for the broker registry to list at least one broker.
// listener is the source brokers' listener the mirror connects to.
func (s *source) listener() string {
	if s.cfg.SourceListener == "" {
		return "PLAINTEXT"
	}
	return s.cfg.SourceListener
}

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
				if host, port, ok := b.Endpoint(s.listener()); ok {
					seeds = append(seeds, net.JoinHostPort(host, strconv.Itoa(int(port))))
				} else {
					return nil, fmt.Errorf("broker %d has no %s listener: give the source security settings of a listener it has", b.ID, s.listener())
				}
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
// topics, and the watermarks fresh, until ctx ends or something fatal
// happens.
func (s *source) manage(ctx context.Context) {
	tick := time.NewTicker(groupCheckEvery)
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

// prepare makes the target ready for a partition's first record: the
// target topic exists, and the placement is known. It waits while the
// target cannot be reached, as long as ctx allows.
func (s *source) prepare(ctx context.Context, part *partition) error {
	n, ok := s.counts[part.topic]
	if !ok {
		var err error
		n, err = retry(ctx, s.log, s.events.failures.WithLabelValues("source"), "reading topic "+part.topic, func() (int32, error) {
			data, _, err := s.zk.Conn.Get(s.zk.Paths.Topic(part.topic))
			if err != nil {
				return 0, fmt.Errorf("reading topic %s: %w", part.topic, err)
			}
			node, err := cluster.DecodeTopicNode(data)
			if err != nil {
				return 0, &fatalError{fmt.Errorf("source %s: topic %s: %w", s.Name, part.topic, err)}
			}
			return int32(len(node.Leaders)), nil
		})
		if err != nil {
			return err
		}
		s.counts[part.topic] = n
	}
	targetN, err := s.tgt.ensureTopic(ctx, s.Name, part.topic, n)
	if err != nil {
		return err
	}
	part.mu.Lock()
	part.targetN = targetN
	if n == targetN {
		part.target = part.partition
	}
	part.mu.Unlock()
	return nil
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
	off, err := cluster.DecodeOffsetNode(data)
	if err != nil {
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

// close leaves the group, which commits what the target acknowledged. The
// caller has stopped the goroutines and flushed the target.
func (s *source) close() {
	if s.zk == nil {
		return
	}
	s.leave()
	s.admin.Close()
	s.zk.Close()
}
