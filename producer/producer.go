// Package producer configures kgo (franz-go) producers the way the paper
// describes them: the partition is chosen at random or by hashing a key,
// records are batched by size and linger time, and acknowledgements can be
// switched off (fire-and-forget).
//
// Keyed records go where the Java client sends them: murmur2 of the key,
// sign bit masked, modulo the partition count (Kafka's default partitioner,
// unchanged for keyed records since 0.8.2). So a key lands on the same
// partition across restarts and across Go, Java and librdkafka producers
// configured with murmur2, and a consumer group sees all records of one key
// in one consumer, in order. We do not re-implement the hash: kgo's
// StickyKeyPartitioner(nil) already is Kafka's, and our tests pin it to
// Kafka's own test vectors.
package producer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/kgolog"
)

// Partitioning chooses a record's partition.
type Partitioning int

const (
	// ByKey sends a keyed record to murmur2(key) mod partitions, as the
	// Java client does; records without a key go to a random partition,
	// kept for a whole batch so that batches stay large.
	ByKey Partitioning = iota
	// Random ignores keys: each batch goes to a random partition. This is
	// the paper's "at random", which spreads load evenly but gives no
	// per-key order.
	Random
)

// Acks is how much the producer waits for.
type Acks int

const (
	// AcksAll waits until the broker has flushed the batch to disk; it is
	// the default, and the only mode with idempotent (duplicate-free)
	// retries.
	AcksAll Acks = iota
	// AcksLeader waits until the broker appended the batch, not for the
	// flush: a broker crash can lose it.
	AcksLeader
	// AcksNone is the paper's fire-and-forget: no answer is awaited, so a
	// batch lost on the way is lost silently. Fastest.
	AcksNone
)

// Config describes a producer.
type Config struct {
	// Brokers are seed brokers, host:port. Either Brokers or ZooKeeper.
	Brokers []string
	// ZooKeeper is a cluster's connect string; the seeds are read from its
	// broker registry.
	ZooKeeper string
	// Partitioning defaults to ByKey.
	Partitioning Partitioning
	// Acks defaults to AcksAll.
	Acks Acks
	// BatchBytes bounds one batch (default 1,000,012 bytes, as Kafka's
	// message.max.bytes; it must not exceed the broker's).
	BatchBytes int32
	// Linger is how long a partition waits for more records before its batch
	// is sent. 0 sends as soon as the previous request returns, which
	// already batches under load; a few milliseconds make batches larger at
	// low rates.
	Linger time.Duration
	// Logger receives the client's warnings and errors.
	Logger *slog.Logger
	// ClientOptions are extra kgo options, applied last.
	ClientOptions []kgo.Opt
}

// New returns a kgo client configured by cfg, seeded from cfg.Brokers or the
// broker registry in ZooKeeper.
func New(ctx context.Context, cfg Config) (*kgo.Client, error) {
	seeds := cfg.Brokers
	if len(seeds) == 0 && cfg.ZooKeeper != "" {
		brokers, err := cluster.DiscoverBrokers(ctx, cfg.ZooKeeper, cfg.Logger)
		if err != nil {
			return nil, fmt.Errorf("producer: finding brokers: %w", err)
		}
		for _, b := range brokers {
			seeds = append(seeds, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("producer: no brokers: set Config.Brokers or Config.ZooKeeper")
	}
	opts, err := Options(cfg)
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
}

// Options translates cfg (all but the seeds) into kgo options, for callers
// that build their own client.
func Options(cfg Config) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch cfg.Partitioning {
	case ByKey, Random:
		opts = append(opts, kgo.RecordPartitioner(Partitioner(cfg.Partitioning)))
	default:
		return nil, fmt.Errorf("producer: unknown Partitioning %d", cfg.Partitioning)
	}
	switch cfg.Acks {
	case AcksAll:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case AcksLeader:
		// kgo's idempotence needs acks=all; without it a retry may
		// duplicate, which is the trade this mode makes.
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case AcksNone:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("producer: unknown Acks %d", cfg.Acks)
	}
	if cfg.BatchBytes < 0 {
		return nil, fmt.Errorf("producer: BatchBytes %d is negative", cfg.BatchBytes)
	}
	if cfg.BatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(cfg.BatchBytes))
	}
	if cfg.Linger < 0 {
		return nil, fmt.Errorf("producer: Linger %v is negative", cfg.Linger)
	}
	// Always set: kgo's own default lingers 10 ms, which would add 10 ms
	// to every record at low rates (the mirror's end-to-end latency).
	opts = append(opts, kgo.ProducerLinger(cfg.Linger))
	if cfg.Logger != nil {
		opts = append(opts, kgo.WithLogger(kgolog.New(cfg.Logger)))
	}
	return append(opts, cfg.ClientOptions...), nil
}

// Partitioner returns the kgo partitioner for p.
func Partitioner(p Partitioning) kgo.Partitioner {
	if p == Random {
		return kgo.StickyPartitioner()
	}
	return kgo.StickyKeyPartitioner(nil)
}

// PartitionForKey is the partition, among n, that a record with this key
// goes to under ByKey, the same the Java client picks. Tools use it to know
// where a key lives without producing. A nil key has no fixed partition
// (keyless records go to a random one): -1. An empty, non-nil key is a key.
func PartitionForKey(key []byte, n int32) int32 {
	if n <= 0 || key == nil {
		return -1
	}
	p := kgo.StickyKeyPartitioner(nil).ForTopic("")
	return int32(p.Partition(&kgo.Record{Key: key}, int(n)))
}
