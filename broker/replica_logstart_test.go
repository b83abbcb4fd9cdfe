package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// A follower that returns after its leader deleted records past the
// follower's log end (DeleteRecords, as Kafka Streams purges its
// repartition topics every commit) fetches from the leader's log start and
// rejoins the ISR. (Found by TestKafkaStreamsExactlyOnceUnderKills: the
// leader answers OFFSET_OUT_OF_RANGE, which the follower read as its own
// log being ahead, and it stayed out of the ISR for good.)
func TestFollowerBelowTheLeadersLogStartRejoins(t *testing.T) {
	const topic = "purged"
	connect, brokers, admin := replicatedCluster(t, topic)
	old := partitionMeta(t, admin, topic).Leader
	returning := brokers[old-1]
	seeds := kgo.SeedBrokers(brokers[0].Addr, brokers[1].Addr, brokers[2].Addr)
	cl := newClientOpts(t, seeds, kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produce := func(n int) {
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(10)
	returning.Stop() // the leader: another takes over
	testenv.Eventually(t, 30*time.Second, "a new leader", func() bool {
		l := partitionMeta(t, admin, topic).Leader
		return l > 0 && l != old
	})
	produce(20)
	del, err := admin.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 30}}})
	if err != nil || del.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, del.Error())
	}
	id := old
	follower := returning
	testenv.StartClusterBroker(t, connect, id, testenv.WithDataDir(follower.DataDir), testenv.WithAddr(follower.Addr))
	testenv.Eventually(t, 30*time.Second, "the returned follower back in the ISR", func() bool {
		return len(partitionMeta(t, admin, topic).ISR) == 3
	})
}
