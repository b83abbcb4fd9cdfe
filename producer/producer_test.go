package producer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/producer"
)

func TestProducerModesAgainstACluster(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 3)
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, topic := range []string{"keyed", "random", "fire"} {
		resp, err := kadm.NewClient(admin).CreateTopics(context.Background(), 12, 1, nil, topic)
		if err != nil || resp[topic].Err != nil {
			t.Fatalf("creating %s: %v %v", topic, err, resp[topic].Err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("by key, seeds from ZooKeeper, batched", func(t *testing.T) {
		cl := newProducer(t, ctx, producer.Config{ZooKeeper: connect, Linger: 5 * time.Millisecond, BatchBytes: 16 << 10})
		var recs []*kgo.Record
		for i := range 300 {
			recs = append(recs, &kgo.Record{Topic: "keyed", Key: []byte(fmt.Sprintf("user-%d", i%50)), Value: []byte(fmt.Sprint(i))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range readAll(t, brokers[1].Addr, "keyed", 300) {
			if want := producer.PartitionForKey(r.Key, 12); r.Partition != want {
				t.Fatalf("key %s landed on partition %d, murmur2 says %d", r.Key, r.Partition, want)
			}
		}
	})

	t.Run("random", func(t *testing.T) {
		cl := newProducer(t, ctx, producer.Config{Brokers: []string{brokers[2].Addr}, Partitioning: producer.Random})
		for i := range 40 {
			// Same key every time: Random must ignore it.
			r := &kgo.Record{Topic: "random", Key: []byte("same"), Value: []byte(fmt.Sprint(i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		used := map[int32]bool{}
		for _, r := range readAll(t, brokers[0].Addr, "random", 40) {
			used[r.Partition] = true
		}
		if len(used) < 4 {
			t.Fatalf("40 batches with one key went to %d partitions; Random should spread them", len(used))
		}
	})

	t.Run("fire and forget", func(t *testing.T) {
		cl := newProducer(t, ctx, producer.Config{Brokers: []string{brokers[0].Addr}, Acks: producer.AcksNone})
		for i := range 200 {
			cl.Produce(ctx, &kgo.Record{Topic: "fire", Value: []byte(fmt.Sprint(i))}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, brokers[0].Addr, "fire", 200); len(got) != 200 {
			t.Fatalf("read %d of 200", len(got))
		}
	})
}

func newProducer(t *testing.T, ctx context.Context, cfg producer.Config) *kgo.Client {
	t.Helper()
	cl, err := producer.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func readAll(t *testing.T, seed, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	return out
}
