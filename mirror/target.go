package mirror

import (
	"github.com/prometheus/client_golang/prometheus"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/producer"
)

// target is the analysis cluster: one idempotent acks=all producer for all
// sources, and the topics it has seen.
type target struct {
	client   *kgo.Client
	log      *slog.Logger
	strict   bool
	failures prometheus.Counter // failed attempts that are retried

	mu       sync.Mutex
	counts   map[string]int32 // partition count of each target topic seen
	oneToOne map[string]int32 // topics seen with the source's partition count, and that count
	warned   map[string]bool  // source/topic pairs whose count mismatch was logged
}

func newTarget(cfg *compiled, failures prometheus.Counter) (*target, error) {
	opts, err := producer.Options(producer.Config{
		Acks:   producer.AcksAll,
		Logger: cfg.Logger,
		ClientOptions: append([]kgo.Opt{
			kgo.SeedBrokers(cfg.Target...),
			// The mirror copies _audit, which brokers admit writes to only
			// from listed client ids (broker.DefaultInternalClients).
			kgo.ClientID("tributary-mirror"),
			// We choose every partition ourselves (see placement).
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			// The mirror created the topic before producing to it; an
			// unknown topic is a moment of stale metadata, or an operator
			// deleting it, which the lag shows. Never drop records for it.
			kgo.UnknownTopicRetries(-1),
			// Bounded buffering is the back-pressure that stops fetching
			// while the target is slow or down.
			kgo.MaxBufferedBytes(64 << 20),
		}, cfg.ProducerOptions...),
	})
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("target %v: %w", cfg.Target, err)
	}
	return &target{client: cl, log: cfg.Logger, strict: cfg.StrictPartitions, failures: failures, counts: map[string]int32{}, oneToOne: map[string]int32{}, warned: map[string]bool{}}, nil
}

// ensureTopic returns the partition count of topic in the target, creating
// the topic with the source's count and configs when it is missing, and
// growing it when the source grew a topic this process mirrored partition
// for partition. It retries while the target cannot be reached, as long as
// ctx allows: a target that is down delays the mirror, it does not stop it.
func (t *target) ensureTopic(ctx context.Context, source, topic string, sourceN int32, configs map[string]string) (int32, error) {
	t.mu.Lock()
	n, ok := t.counts[topic]
	t.mu.Unlock()
	if !ok || n < sourceN {
		var err error
		n, err = retry(ctx, t.log, t.failures, "looking up or creating topic "+topic+" in the target", func() (int32, error) {
			return t.lookupOrCreate(ctx, topic, sourceN, configs)
		})
		if err != nil {
			return 0, err
		}
	}
	t.mu.Lock()
	oneToOne := t.oneToOne[topic]
	t.mu.Unlock()
	if n < sourceN && oneToOne == n {
		// The source grew a topic mirrored partition for partition: grow
		// the target alike, so that placement stays the same.
		if _, err := retry(ctx, t.log, t.failures, "adding partitions to topic "+topic+" in the target", func() (int32, error) {
			return sourceN, t.grow(ctx, topic, sourceN)
		}); err != nil {
			return 0, err
		}
		if err := t.awaitPartitions(ctx, topic, sourceN); err != nil {
			return 0, err
		}
		t.log.Info("added partitions to the target topic, as the source did", "topic", topic, "from", n, "to", sourceN)
		n = sourceN
	}
	t.mu.Lock()
	t.counts[topic] = n
	if n == sourceN {
		t.oneToOne[topic] = n
	}
	t.mu.Unlock()
	if n != sourceN {
		if t.strict {
			return 0, &fatalError{fmt.Errorf("topic %s has %d partitions in source %s but %d in the target, and strict partitions are on: "+
				"give the target topic %d partitions, or run without --strict-partitions to place records by key hash", topic, sourceN, source, n, sourceN)}
		}
		t.mu.Lock()
		warned := t.warned[source+"/"+topic]
		t.warned[source+"/"+topic] = true
		t.mu.Unlock()
		if warned {
			return n, nil
		}
		t.log.Warn("partition counts differ: records go by key hash (keyless ones by source partition modulo the target's count)",
			"topic", topic, "source", source, "source_partitions", sourceN, "target_partitions", n)
	}
	return n, nil
}

// grow gives topic n partitions in the target.
func (t *target) grow(ctx context.Context, topic string, n int32) error {
	r, err := kadm.NewClient(t.client).UpdatePartitions(ctx, int(n), topic)
	if err != nil {
		return err
	}
	if e := r[topic].Err; e != nil && !errors.Is(e, kerr.InvalidPartitions) {
		return &fatalError{fmt.Errorf("adding partitions to %s in the target: %w", topic, e)}
	}
	return nil
}

// lookupOrCreate asks the target for the topic, without letting the broker
// auto-create it (it would use its default partition count), and creates
// it with n partitions if it does not exist.
func (t *target) lookupOrCreate(ctx context.Context, topic string, n int32, configs map[string]string) (int32, error) {
	for attempt := 0; ; attempt++ {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = false
		resp, err := req.RequestWith(ctx, t.client)
		if err != nil {
			return 0, err
		}
		if len(resp.Topics) != 1 {
			return 0, fmt.Errorf("metadata for %s: %d topics in the answer", topic, len(resp.Topics))
		}
		switch err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); {
		case err == nil:
			return int32(len(resp.Topics[0].Partitions)), nil
		case !errors.Is(err, kerr.UnknownTopicOrPartition) || attempt > 0:
			return 0, fmt.Errorf("metadata for %s: %w", topic, err)
		}
		creq := kmsg.NewPtrCreateTopicsRequest()
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, n, -1
		for _, k := range sortedKeys(configs) {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(configs[k])
			ct.Configs = append(ct.Configs, c)
		}
		creq.Topics = append(creq.Topics, ct)
		creq.TimeoutMillis = 30000
		cresp, err := creq.RequestWith(ctx, t.client)
		if err != nil {
			return 0, err
		}
		if len(cresp.Topics) != 1 {
			return 0, fmt.Errorf("creating %s: %d topics in the answer", topic, len(cresp.Topics))
		}
		cerr := kerr.ErrorForCode(cresp.Topics[0].ErrorCode)
		switch {
		case cerr == nil:
			t.log.Info("created topic in the target", "topic", topic, "partitions", n, "configs", configs)
		case errors.Is(cerr, kerr.TopicAlreadyExists): // another mirror won the race
		default:
			msg := ""
			if m := cresp.Topics[0].ErrorMessage; m != nil {
				msg = ": " + *m
			}
			return 0, &fatalError{fmt.Errorf("creating topic %s with %d partitions in the target: %w%s", topic, n, cerr, msg)}
		}
		// Read the count back: it is the one that exists, whoever created it.
	}
}

// byKey places a record from source partition sp among the n partitions
// of a target topic whose partition count differs from the source's: by
// key hash where the Java client would put it, and a keyless record by its
// source partition, so that one source partition's keyless records stay in
// one target partition, in order.
func byKey(key []byte, sp, n int32) int32 {
	if key != nil {
		return producer.PartitionForKey(key, n)
	}
	return sp % n
}

// fatalError marks an error that retrying cannot fix: the mirror stops.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// retry calls fn until it succeeds, returns a fatalError, or ctx ends,
// backing off from 100ms to 5s and logging the first failure and then every
// 30s, so that a long outage is visible but not noisy.
func retry[T any](ctx context.Context, log *slog.Logger, failures prometheus.Counter, what string, fn func() (T, error)) (T, error) {
	backoff := 100 * time.Millisecond
	var lastLog time.Time
	start := time.Now()
	for {
		v, err := fn()
		var fatal *fatalError
		if err == nil || errors.As(err, &fatal) {
			if err == nil && !lastLog.IsZero() {
				log.Info("succeeded after retrying", "what", what, "after", time.Since(start).Round(time.Millisecond))
			}
			return v, err
		}
		failures.Inc()
		if ctx.Err() != nil {
			return v, fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		}
		if time.Since(lastLog) > 30*time.Second {
			log.Warn("failed; retrying", "what", what, "err", err)
			lastLog = time.Now()
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// awaitPartitions waits until the producer knows topic's partitions up to
// n-1. A record for a partition it does not know yet fails at once, while
// the records after it land once its metadata catches up: the copy would
// then have a hole that resuming from the target's tail cannot see.
func (t *target) awaitPartitions(ctx context.Context, topic string, n int32) error {
	for {
		if leader, _, _ := t.client.PartitionLeader(topic, 0); leader < 0 {
			return nil // not loaded yet: the first record loads every partition
		}
		if leader, _, _ := t.client.PartitionLeader(topic, n-1); leader >= 0 {
			return nil
		}
		t.client.ForceMetadataRefresh()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
