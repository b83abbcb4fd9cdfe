package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/consumer"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A replicated partition whose preferred leader (its first replica) died
// is served by the replica the controller elected, so the group still
// consumes it: availability follows the state node's leader, not the
// preferred one.
func TestGroupConsumesPartitionWhosePreferredLeaderDied(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 3)
	client := newClient(t, brokers[0].Addr)
	adm := kadm.NewClient(client)
	const topic = "replicated"
	if _, err := adm.CreateTopic(context.Background(), 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "every partition has three in-sync replicas", func() bool {
		md, err := adm.Metadata(context.Background(), topic)
		if err != nil || len(md.Topics[topic].Partitions) != 3 {
			return false
		}
		for _, p := range md.Topics[topic].Partitions {
			if p.Err != nil || len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	testenv.ProduceRange(t, client, topic, 0, 300)

	md, err := adm.Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	dead := md.Topics[topic].Partitions[0].Replicas[0]
	var live *testenv.Broker
	for i, b := range brokers {
		if int32(i+1) == dead {
			b.Stop()
		} else {
			live = b
		}
	}
	liveAdm := kadm.NewClient(newClient(t, live.Addr))
	testenv.Eventually(t, 20*time.Second, "partition 0 has a live leader", func() bool {
		md, err := liveAdm.Metadata(context.Background(), topic)
		if err != nil {
			return false
		}
		p := md.Topics[topic].Partitions[0]
		return p.Err == nil && p.Leader >= 0 && p.Leader != dead
	})

	got := &deliveries{}
	g := join(t, consumer.Config{ZooKeeper: connect, Group: "readers", Topics: []string{topic}, ID: "c1", Start: consumer.Smallest})
	consume(t, g, got)
	got.waitAll(t, 300, 30*time.Second)
	got.check(t, 300)
}
