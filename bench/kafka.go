package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register(&system{
		name: "tributary",
		notes: "continuous flush, the default: a partition fsyncs as soon as its previous fsync ends, with 10000 messages or 200 ms as upper bounds " +
			"(unless broker flags are given below); consumers see flushed data only. " +
			"Client kgo: batch N = one Produce request of one N-record batch, no compression; acks=1 = after append",
		start:   startTributary,
		connect: connectKafka,
	})
	register(&system{
		name: "kafka",
		notes: "Apache Kafka " + kafkaVersion() + " KRaft, one node, its defaults: never fsyncs (durability from replication, " +
			"of which one node has none); consumers see unflushed data. Client kgo, as for Tributary",
		start:   startPeer("kafka", 1),
		connect: connectKafka,
	})
	register(&system{
		name: "kafka-flush",
		notes: "Apache Kafka " + kafkaVersion() + " KRaft, one node; log.flush.interval.messages=10000, log.flush.interval.ms=200 " +
			"(Tributary's --flush-policy interval bounds); consumers see unflushed data. Client kgo, as for Tributary",
		start:   startPeer("kafka-flush", 1),
		connect: connectKafka,
	})
	register(&system{
		name: "tributary-rf3",
		notes: "three `tributary broker` processes and one ZooKeeper 3.8, continuous flush as for tributary; an acks=all write is answered " +
			"once every in-sync replica has it on disk (fsynced), and consumers see it then too. Topics: one partition; RF3 with " +
			"min.insync.replicas=2. Client kgo, idempotent producer, acks=all; memory: sum over the 3 brokers and ZooKeeper",
		nodes:   ClusterNodes,
		start:   startTributaryCluster,
		connect: connectKafka,
	})
	register(&system{
		name: "kafka-rf3",
		notes: "Apache Kafka " + kafkaVersion() + " KRaft, three nodes each broker and controller (a 3-voter quorum), 1 GB heap each, " +
			"its defaults: never fsyncs; an acks=all write is answered once every in-sync replica has it in memory (page cache). " +
			"Topics, client and memory as for tributary-rf3 (sum over the 3 JVMs)",
		nodes:   ClusterNodes,
		start:   startPeer("kafka-rf3", ClusterNodes),
		connect: connectKafka,
	})
	register(&system{
		name: "kafka-rf3-flush",
		notes: "as kafka-rf3, with log.flush.interval.messages=10000, log.flush.interval.ms=200 on every node (Tributary's flush " +
			"bounds); acks=all still does not wait for an fsync",
		nodes:   ClusterNodes,
		start:   startPeer("kafka-rf3-flush", ClusterNodes),
		connect: connectKafka,
	})
}

// kafkaDriver drives Tributary and Apache Kafka with the same client, kgo.
type kafkaDriver struct {
	seeds []string
	admin *kadm.Client
	rng   *rand.Rand
}

// connectKafka connects to addr, one host:port or a cluster's
// host:port,host:port,..., and waits until every broker of it is in the
// metadata.
func connectKafka(ctx context.Context, addr string) (driver, error) {
	seeds := strings.Split(addr, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	// A freshly started KRaft node accepts connections a moment before it
	// answers metadata, and a cluster's brokers register one by one; wait
	// for that here, not inside a timed row.
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, err := adm.BrokerMetadata(ctx)
		if err == nil && len(m.Brokers) < len(seeds) {
			err = fmt.Errorf("%d of %d brokers registered (metadata lists %v)", len(m.Brokers), len(seeds), m.Brokers.NodeIDs())
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			adm.Close()
			return nil, fmt.Errorf("broker metadata: %w", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return &kafkaDriver{seeds: seeds, admin: adm, rng: rand.New(rand.NewPCG(1, 2))}, nil
}

func (d *kafkaDriver) Close() { d.admin.Close() }

// createTopic creates topic with one partition of replicas replicas and the
// given topic configs; an existing topic is left as it is.
func (d *kafkaDriver) createTopic(ctx context.Context, topic string, replicas int, configs map[string]*string) error {
	resp, err := d.admin.CreateTopic(ctx, 1, int16(replicas), configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

func (d *kafkaDriver) endOffset(ctx context.Context, topic string) (int64, error) {
	offs, err := d.admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok {
		return 0, fmt.Errorf("no end offset for %s", topic)
	}
	return o.Offset, o.Err
}

func (d *kafkaDriver) Produce(ctx context.Context, topic string, n, batch int, acked bool, deadline time.Time) (int, int, error) {
	if err := d.createTopic(ctx, topic, 1, nil); err != nil {
		return 0, 0, err
	}
	acks := kgo.NoAck()
	if acked {
		acks = kgo.LeaderAck()
	}
	return d.produce(ctx, topic, n, batch, deadline, kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite())
}

func (d *kafkaDriver) CreateReplicated(ctx context.Context, topic string, replicas, minISR int) error {
	isr := strconv.Itoa(minISR)
	if err := d.createTopic(ctx, topic, replicas, map[string]*string{"min.insync.replicas": &isr}); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var inSync int
		tds, err := d.admin.ListTopics(ctx, topic)
		if err == nil {
			err = tds.Error()
		}
		if err == nil {
			if p, ok := tds[topic].Partitions[0]; ok && p.Err == nil && p.Leader >= 0 {
				inSync = len(p.ISR)
			}
		}
		if inSync >= replicas {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s: %d of %d replicas in sync after 60s (last error: %v)", topic, inSync, replicas, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ProduceAcksAll produces with kgo's defaults for acks (all) and
// idempotence (on), so both systems serve the same idempotent producer.
func (d *kafkaDriver) ProduceAcksAll(ctx context.Context, topic string, n, batch int, deadline time.Time) (int, int, error) {
	return d.produce(ctx, topic, n, batch, deadline, kgo.RequiredAcks(kgo.AllISRAcks()))
}

// produce sends n messages to topic, batch at a time, with the producer
// options opts.
func (d *kafkaDriver) produce(ctx context.Context, topic string, n, batch int, deadline time.Time, opts ...kgo.Opt) (int, int, error) {
	// Manual flushing makes a batch exactly `batch` records, sent in one
	// request: the paper's producer, not kgo's linger heuristics.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(d.seeds...), kgo.DefaultProduceTopic(topic),
		kgo.ManualFlushing(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(batch + 1)}, opts...)...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	value := payload(d.rng)
	var failed atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	sent := 0
	for sent < n && time.Now().Before(deadline) {
		k := min(batch, n-sent)
		for range k {
			cl.Produce(ctx, &kgo.Record{Value: value}, done)
		}
		if err := cl.Flush(ctx); err != nil {
			return sent, 0, err
		}
		if e := failed.Load(); e != nil {
			return sent, 0, *e
		}
		sent += k
	}
	stored, err := d.waitStored(ctx, topic, sent)
	return sent, stored, err
}

// waitStored polls the end offset (for Tributary: the flushed offset) until
// it reaches n, or until it stops moving.
func (d *kafkaDriver) waitStored(ctx context.Context, topic string, n int) (int, error) {
	return pollStored(ctx, n, func() (int, error) {
		o, err := d.endOffset(ctx, topic)
		return int(o), err
	})
}

// pollStored calls count until it reaches n; when it stops growing for 10 s
// what it reached is returned (loss is reported by the caller, not hidden).
func pollStored(ctx context.Context, n int, count func() (int, error)) (int, error) {
	last, lastChange := -1, time.Now()
	for {
		c, err := count()
		if err != nil {
			return 0, err
		}
		if c >= n {
			return n, nil
		}
		if c != last {
			last, lastChange = c, time.Now()
		} else if time.Since(lastChange) > 10*time.Second {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (d *kafkaDriver) consumer(topic string, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(d.seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// About 200 KB per fetch, as in the paper's consumer test.
		kgo.FetchMaxBytes(200 << 10), kgo.FetchMaxPartitionBytes(200 << 10),
		kgo.FetchMaxWait(500 * time.Millisecond)}, extra...)
	return kgo.NewClient(opts...)
}

func (d *kafkaDriver) Consume(ctx context.Context, topic string, n int, deadline time.Time) (int, error) {
	cl, err := d.consumer(topic)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return got, nil // the row's time is up: report what was read
		}
		if err := fs.Err(); err != nil {
			return got, err
		}
		got += fs.NumRecords()
	}
	return got, nil
}

func (d *kafkaDriver) Latency(ctx context.Context, topic string, every time.Duration, stop time.Time) ([]time.Duration, error) {
	if err := d.createTopic(ctx, topic, 1, nil); err != nil {
		return nil, err
	}
	cons, err := d.consumer(topic)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(d.seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return nil, err
	}
	defer prod.Close()

	var (
		mu      sync.Mutex
		lat     []time.Duration
		sent    atomic.Int64
		prodErr atomic.Pointer[error]
	)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				if t, ok := sentAt(r.Value); ok {
					mu.Lock()
					lat = append(lat, now.Sub(t))
					mu.Unlock()
				}
			})
		}
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for time.Now().Before(stop) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		prod.Produce(ctx, &kgo.Record{Value: stamp(payload(d.rng))}, func(_ *kgo.Record, err error) {
			if err != nil {
				prodErr.CompareAndSwap(nil, &err)
			}
		})
		sent.Add(1)
	}
	if err := prod.Flush(ctx); err != nil {
		return nil, err
	}
	if e := prodErr.Load(); e != nil {
		return nil, *e
	}
	return waitLatencies(&mu, &lat, int(sent.Load()), cancel, consumed), nil
}

// waitLatencies waits up to 10 s for the consumer to see every message sent,
// then stops it and returns what it measured.
func waitLatencies(mu *sync.Mutex, lat *[]time.Duration, sent int, cancel func(), consumed <-chan struct{}) []time.Duration {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(*lat)
		mu.Unlock()
		if n >= sent {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-consumed
	mu.Lock()
	defer mu.Unlock()
	return append([]time.Duration(nil), (*lat)...)
}

func kafkaVersion() string {
	if v := envOr("KAFKA_VERSION", ""); v != "" {
		return v
	}
	return "4.4.0"
}
