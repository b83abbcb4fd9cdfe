package broker_test

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// gather collects a broker's metrics as a scrape would, by family name.
func gather(t *testing.T, b *testenv.Broker) map[string]*dto.MetricFamily {
	t.Helper()
	return gatherCollector(t, b.Metrics())
}

// The replication metrics follow a follower's death and return: with the
// partition on three brokers, the leader reports each follower's lag;
// once a follower is stopped the leader counts an ISR shrink and one
// under-replicated partition, and once it is back and caught up an ISR
// expansion and none. Exactly one broker says it is the controller.
func TestReplicationMetricsFollowAFollower(t *testing.T) {
	const topic = "watched"
	connect, brokers, admin := replicatedCluster(t, topic)
	p := partitionMeta(t, admin, topic)
	leader := brokers[p.Leader-1]
	var follower int32
	for _, id := range p.Replicas {
		if id != p.Leader {
			follower = id
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.Addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 10 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	series := map[string]string{"topic": topic, "partition": "0"}
	testenv.Eventually(t, 20*time.Second, "the leader reports both followers caught up", func() bool {
		f := gather(t, leader)
		lags := f["tributary_replica_follower_lag_messages"]
		return lags != nil && len(lags.GetMetric()) == 2 && sum(f, "tributary_replica_follower_lag_messages", series) == 0
	})
	f := gather(t, leader)
	if got := sum(f, "tributary_partitions_under_replicated", nil); got != 0 {
		t.Fatalf("under-replicated partitions with the full isr: %v", got)
	}
	if got := sum(f, "tributary_isr_shrinks_total", nil) + sum(f, "tributary_isr_expands_total", nil); got != 0 {
		t.Fatalf("isr changes before any happened: %v", got)
	}
	controllers := 0.0
	for _, b := range brokers {
		controllers += sum(gather(t, b), "tributary_controller_active", nil)
	}
	if controllers != 1 {
		t.Fatalf("%v brokers say they are the controller, want 1", controllers)
	}

	old := brokers[follower-1]
	old.Stop()
	testenv.Eventually(t, 20*time.Second, "the leader reports the partition under-replicated and the shrink", func() bool {
		f := gather(t, leader)
		return sum(f, "tributary_partitions_under_replicated", nil) == 1 && sum(f, "tributary_isr_shrinks_total", nil) >= 1
	})

	testenv.StartClusterBroker(t, connect, follower, testenv.WithDataDir(old.DataDir), testenv.WithAddr(old.Addr),
		testenv.WithConfig(func(c *broker.Config) { c.ReplicaLagMax = 3 * time.Second; c.MinInsyncReplicas = 2 }))
	testenv.Eventually(t, 30*time.Second, "the leader reports the follower back in the isr", func() bool {
		f := gather(t, leader)
		return sum(f, "tributary_partitions_under_replicated", nil) == 0 && sum(f, "tributary_isr_expands_total", nil) >= 1
	})
}

// A partition whose only broker died is offline, and the controller says
// so: two brokers, a topic with a partition on each, the non-controller
// stopped.
func TestOfflinePartitionsOnTheController(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 2)
	cl := newClient(t, brokers[0].Addr, kgo.SeedBrokers(brokers[0].Addr, brokers[1].Addr))
	admin := kadm.NewClient(cl)
	testenv.Eventually(t, 10*time.Second, "the broker creating the topic sees both", func() bool {
		m, err := admin.BrokerMetadata(context.Background())
		return err == nil && len(m.Brokers) == 2
	})
	testenv.CreateTopic(t, cl, "halves", 2)
	var controller, other *testenv.Broker
	testenv.Eventually(t, 20*time.Second, "one broker is the controller", func() bool {
		a, b := sum(gather(t, brokers[0]), "tributary_controller_active", nil), sum(gather(t, brokers[1]), "tributary_controller_active", nil)
		switch {
		case a == 1 && b == 0:
			controller, other = brokers[0], brokers[1]
		case a == 0 && b == 1:
			controller, other = brokers[1], brokers[0]
		default:
			return false
		}
		return true
	})
	if got := sum(gather(t, controller), "tributary_partitions_offline", nil); got != 0 {
		t.Fatalf("offline partitions with both brokers up: %v", got)
	}
	if fams := gather(t, other); fams["tributary_partitions_offline"] != nil {
		t.Error("a broker that is not the controller reports offline partitions")
	}
	other.Stop()
	testenv.Eventually(t, 20*time.Second, "the controller reports the stopped broker's partition offline", func() bool {
		return sum(gather(t, controller), "tributary_partitions_offline", nil) == 1
	})
}
