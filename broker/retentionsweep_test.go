package broker_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestRetentionReachesClosedPartitions: with room for one open log only, a
// partition closed to make room for another still has its expired
// segments deleted, by the sweep, and is closed again afterwards.
func TestRetentionReachesClosedPartitions(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.MaxPartitionFiles = 3
		c.MaxOpenPartitions = 1
		c.Log = log.Config{SegmentBytes: 1024, RetentionAge: time.Millisecond, RetentionCheckInterval: time.Hour}
	}))
	createTopic(t, b.Addr, "old", 2, nil)
	cl := newClient(t, b.Addr, kgo.DefaultProduceTopic("old"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := context.Background()
	value := bytes.Repeat([]byte("x"), 300)
	for range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Writing to partition 1 closes partition 0: the budget holds one log.
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if n := b.OpenPartitions(); n != 1 {
		t.Fatalf("%d partitions open with descriptors for one, want 1", n)
	}
	time.Sleep(5 * time.Millisecond) // let retention.ms=1ms pass
	if opened := b.SweepRetention(); opened != 1 {
		t.Fatalf("sweep opened %d partitions, want 1 (partition 0; partition 1 is open and has one segment)", opened)
	}
	// Opening partition 0 closed partition 1 (one log fits), and the sweep
	// closes what it opened.
	if n := b.OpenPartitions(); n != 0 {
		t.Fatalf("%d partitions open after the sweep, want 0", n)
	}
	w := dial(t, b.Addr)
	if start := listOffset(t, w, "old", 0, -2); start == 0 {
		t.Fatal("partition 0 still starts at offset 0: the sweep deleted no expired segment")
	}
	if end := listLatest(t, w, "old", 0); end != 10 {
		t.Fatalf("partition 0 ends at %d, want 10", end)
	}
}
