package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// With PartitionMetrics "topic" every partition-labelled family has one
// series per topic, summed over its partitions (a group's lag per group
// and topic), so a broker with thousands of partitions exports a few
// series per topic instead of eight per partition.
func TestPartitionMetricsPerTopic(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.PartitionMetrics = broker.PartitionMetricsTopic }))
	brokertest.CreateTopic(t, b.Addr, "clicks", 4, nil)
	brokertest.CreateTopic(t, b.Addr, "views", 2, nil)
	cl := brokertest.NewClient(t, b.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	for p := range int32(4) {
		for range 3 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "views", Partition: 1, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	for p := range int32(4) {
		offs.Add(kadm.Offset{Topic: "clicks", Partition: p, At: 1, LeaderEpoch: -1})
	}
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, "readers", offs); err != nil {
		t.Fatal(err)
	}

	testenv.Eventually(t, 20*time.Second, "the high watermarks summed per topic", func() bool {
		f := gather(t, b)
		return sum(f, "tributary_partition_high_watermark", map[string]string{"topic": "clicks"}) == 12 &&
			sum(f, "tributary_partition_high_watermark", map[string]string{"topic": "views"}) == 1
	})
	f := gather(t, b)
	for name, fam := range f {
		if !strings.HasPrefix(name, "tributary_partition_") && name != "tributary_group_lag" && name != "tributary_group_committed_offset" {
			continue
		}
		seen := map[string]bool{}
		for _, m := range fam.GetMetric() {
			var topic, group string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "partition":
					if l.GetValue() != "" {
						t.Errorf("%s has a series for partition %s", name, l.GetValue())
					}
				case "topic":
					topic = l.GetValue()
				case "group":
					group = l.GetValue()
				}
			}
			if seen[group+"/"+topic] {
				t.Errorf("%s has two series for topic %s", name, topic)
			}
			seen[group+"/"+topic] = true
		}
	}
	if n := len(f["tributary_partition_size_bytes"].GetMetric()); n != 2 {
		t.Errorf("%d size series, want one per topic", n)
	}
	if got := sum(f, "tributary_group_lag", map[string]string{"group": "readers", "topic": "clicks"}); got != 8 {
		t.Errorf("group lag on clicks %v, want 4 partitions × 2", got)
	}
	if got := sum(f, "tributary_partition_segments", map[string]string{"topic": "clicks"}); got != 4 {
		t.Errorf("segments of clicks %v, want one per partition", got)
	}
}

// An unknown PartitionMetrics value is refused at start, naming the two
// that work.
func TestPartitionMetricsUnknownValueRefused(t *testing.T) {
	_, err := broker.New(broker.Config{DataDir: t.TempDir(), PartitionMetrics: "broker"})
	if err == nil || !strings.Contains(err.Error(), `partition metrics "broker": use partition or topic`) {
		t.Fatalf("New with partition metrics \"broker\": %v", err)
	}
}
