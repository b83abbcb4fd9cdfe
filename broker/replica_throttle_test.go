package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// A reassignment under a replication throttle: the added replica copies
// more than one fetch's worth (replicaPartitionMax), so the throttle,
// set on the follower or on the leader as Kafka's reassignment tool sets
// them, holds fetches back; once it is lifted the move completes with
// identical copies and every record readable.
func TestReassignmentUnderReplicationThrottle(t *testing.T) {
	for _, side := range []string{"follower", "leader"} {
		t.Run(side, func(t *testing.T) {
			topic := "throttled-" + side
			connect, byID, admin := twoReplicas(t, topic)
			leader := partitionMeta(t, admin, topic).Leader
			values := produceLarge(t, byID[leader], topic, 3000, 1000) // 3 MB: three fetches' worth
			byID[3] = testenv.StartClusterBroker(t, connect, 3, testenv.WithConfig(replicaTestConfig))

			// The broker applying the throttle, and the replicas named.
			throttlerID, replicas := int32(3), "0:3"
			if side == "leader" {
				throttlerID, replicas = leader, "0:1,0:2"
			}
			throttler := byID[throttlerID]
			rateKey := side + ".replication.throttled.rate"
			if err := alterTopic(t, admin, topic, kadm.AlterConfig{Name: side + ".replication.throttled.replicas", Value: &replicas}); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 10*time.Second, "throttle rate set", func() bool {
				rate := "100000"
				_, err := admin.AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{{Name: rateKey, Value: &rate}}, throttlerID)
				return err == nil
			})
			// The rate and the list reach the throttler through ZooKeeper
			// watches; a copy started before both arrive runs unthrottled.
			testenv.Eventually(t, 10*time.Second, "the throttler sees the throttle", func() bool {
				return throttler.ReplicationThrottleSeen(topic, 0, side)
			})
			testenv.Eventually(t, 10*time.Second, "the move recorded", func() bool {
				var req kadm.AlterPartitionAssignmentsReq
				req.Assign(topic, 0, []int32{2, 3})
				res, err := admin.AlterPartitionAssignments(context.Background(), req)
				return err == nil && res.Error() == nil
			})
			testenv.Eventually(t, 30*time.Second, "the throttle holds fetches back", func() bool { return throttler.ThrottledFetches() > 0 })

			if _, err := admin.AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: rateKey}}, throttlerID); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 60*time.Second, "the move completes once the throttle is lifted", func() bool {
				l, err := admin.ListPartitionReassignments(context.Background(), kadm.TopicsSet{topic: {0: {}}})
				p := partitionMeta(t, admin, topic)
				return err == nil && len(l) == 0 && slices.Equal(p.Replicas, []int32{2, 3})
			})
			testenv.Eventually(t, 10*time.Second, "brokers 2 and 3 hold identical logs", func() bool {
				return bytes.Equal(firstSegment(t, byID[2], topic), firstSegment(t, byID[3], topic))
			})
			if got := consumeValues(t, []string{byID[2].Addr, byID[3].Addr}, topic, len(values)); !slices.Equal(got, values) {
				t.Fatalf("consumed %d records after the move, want the %d produced", len(got), len(values))
			}
		})
	}
}

// produceLarge writes n records of size bytes each through b, acks=all.
func produceLarge(t *testing.T, b *testenv.Broker, topic string, n, size int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(20), kgo.ProducerBatchMaxBytes(256<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	values := make([]string, n)
	recs := make([]*kgo.Record, n)
	for i := range values {
		values[i] = fmt.Sprintf("%06d-%s", i, strings.Repeat("x", size-7))
		recs[i] = &kgo.Record{Value: []byte(values[i])}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return values
}
