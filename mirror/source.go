package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/kgolog"
)

// source copies one live cluster. One kgo client is both the member of the
// mirror's group in the source and the fetcher; the consume goroutine
// copies what it fetches, the producer's callbacks mark what the target
// acknowledged, and manage keeps the watermarks fresh.
//
// The group is the source's own broker-side consumer group, used for
// assignment only: nothing is ever committed. Every Kafka-protocol cluster
// has one, so any cluster can be a source, and the group's own session
// timeout and (with Config.InstanceID) static membership decide how soon a
// dead mirror's partitions move. Where each partition resumes is read from
// the target (resume.go).
type source struct {
	Source
	cfg     *compiled
	log     *slog.Logger
	tgt     *target
	schemas *schemaMap // nil: ids are copied unchanged
	fail    func(error)
	lastAck *atomic.Int64 // unix nanoseconds of the target's latest acknowledgement, shared by all sources
	events  *events       // the Mirror's event metrics

	client *kgo.Client
	adm    *kadm.Client

	// runCtx is the mirror's run: the writers' goroutines (txn.go) live
	// as long as it, or until their partition is released.
	runCtx context.Context
	// commitCtx bounds the writers' commits: it ends once the shutdown
	// has given them their time (Mirror.Run).
	commitCtx context.Context

	mu      sync.RWMutex
	parts   map[topicPartition]*partition
	writers map[*writer]struct{} // running writers, to finish at shutdown
}

type topicPartition struct {
	topic     string
	partition int32
}

const watermarkPoll = 5 * time.Second

// connect finds the source's brokers (through ZooKeeper for the
// NAME=host:port/chroot form), joins nothing yet, and checks that a broker
// answers within Config.ConnectTimeout: a source that cannot be reached at
// start is a configuration error.
func (s *source) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	seeds := s.Bootstrap
	if s.ZooKeeper != "" {
		var err error
		if seeds, err = s.zkBrokers(ctx); err != nil {
			return fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.WithLogger(kgolog.New(s.log)),
		kgo.ConsumerGroup(s.cfg.Group),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics(s.cfg.Topics),
		// Internal topics of the source (Kafka's __consumer_offsets, ...)
		// are never copied.
		kgo.ConsumeExcludeTopics(s.cfg.Exclude, "^__"),
		kgo.DisableAutoCommit(),
		// Only what the source's committed readers see is copied:
		// aborted transactions and open ones stay behind.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Revocations wait until the copy loop has handed the polled
		// records to the producer, so that draining covers them.
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(s.cfg.SessionTimeout),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.FetchMaxPartitionBytes(s.cfg.FetchMaxPartitionBytes),
		kgo.FetchMaxBytes(s.cfg.FetchMaxBytes),
		// Where the resume offset is gone (retention deleted it) resume at
		// the oldest record kept; the copy logs the gap.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AdjustFetchOffsetsFn(s.assigned),
		kgo.OnPartitionsRevoked(s.revoked),
		kgo.OnPartitionsLost(s.lost),
		kgo.MetadataMaxAge(10 * time.Second), // new topics are found this soon
	}
	if s.cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(s.cfg.InstanceID+"-"+s.Name))
	}
	var err error
	if s.client, err = kgo.NewClient(append(opts, s.cfg.FetchOptions...)...); err != nil {
		return fmt.Errorf("source %s: client: %w", s.Name, err)
	}
	if err := s.client.Ping(ctx); err != nil {
		s.client.Close()
		s.client = nil
		return fmt.Errorf("source %s: cannot reach brokers %v within %v: %w", s.Name, seeds, s.cfg.ConnectTimeout, err)
	}
	s.adm = kadm.NewClient(s.client)
	s.parts = map[topicPartition]*partition{}
	s.writers = map[*writer]struct{}{}
	return nil
}

// listener is the source brokers' listener the mirror connects to.
func (s *source) listener() string {
	if s.cfg.SourceListener == "" {
		return "PLAINTEXT"
	}
	return s.cfg.SourceListener
}

// zkBrokers reads the source's broker registry for the seed addresses, and
// closes the session: with the ZooKeeper form, ZooKeeper is only how the
// brokers are found.
func (s *source) zkBrokers(ctx context.Context) ([]string, error) {
	zs, err := cluster.DialZooKeeper(ctx, s.ZooKeeper, s.log, cluster.WithSessionTimeout(s.cfg.SessionTimeout))
	if err != nil {
		return nil, fmt.Errorf("cannot reach ZooKeeper %s within %v: %w", s.ZooKeeper, s.cfg.ConnectTimeout, err)
	}
	defer zs.Close()
	watch := cluster.NewZKWatch(zs.Conn)
	for {
		ids, err := watch.Children(zs.Paths.BrokerIDs())
		if err != nil {
			return nil, fmt.Errorf("reading the broker registry: %w", err)
		}
		var seeds []string
		for _, id := range ids {
			data, _, err := zs.Conn.Get(zs.Paths.BrokerIDs() + "/" + id)
			if err != nil {
				continue // gone since the listing
			}
			if b, err := cluster.DecodeBrokerNode(data); err == nil {
				host, port, ok := b.Endpoint(s.listener())
				if !ok {
					return nil, fmt.Errorf("broker %d has no %s listener: give the source security settings of a listener it has", b.ID, s.listener())
				}
				seeds = append(seeds, net.JoinHostPort(host, strconv.Itoa(int(port))))
			}
		}
		if len(seeds) > 0 {
			return seeds, nil
		}
		select {
		case <-watch.Fired():
		case <-ctx.Done():
			return nil, fmt.Errorf("no broker is registered under %s in ZooKeeper %s (is the cluster running, and is the chroot right?)",
				zs.Paths.BrokerIDs(), s.ZooKeeper)
		}
	}
}

// manage keeps the watermarks fresh and carries topic configs and
// partition increases (topicsync.go), group offsets (groups.go) and ACLs
// (acls.go) over until ctx ends.
func (s *source) manage(ctx context.Context) {
	tick := time.NewTicker(watermarkPoll)
	defer tick.Stop()
	var lastSync, lastGroups, lastACLs time.Time
	for {
		s.refreshWatermarks(ctx)
		if time.Since(lastSync) >= s.cfg.TopicSyncInterval {
			lastSync = time.Now()
			s.syncTopics(ctx)
		}
		if time.Since(lastGroups) >= s.cfg.GroupSyncInterval {
			lastGroups = time.Now()
			s.syncGroups(ctx)
		}
		if time.Since(lastACLs) >= s.cfg.ACLSyncInterval {
			lastACLs = time.Now()
			s.syncACLs(ctx)
		}
		select {
		case <-ctx.Done():
			return
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

// close leaves the group (committing nothing). The caller has stopped the
// goroutines and flushed the target, or given up on it.
func (s *source) close() {
	if s.client == nil {
		return
	}
	s.client.Close()
	s.client = nil
}
