package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// A new leader whose high watermark is still below where its leader epoch
// began answers ListOffsets latest with OFFSET_NOT_AVAILABLE (retriable,
// as Kafka's KIP-207) rather than an end offset that hides records below
// its log end; once its followers caught up, it answers the end. The
// Jepsen soak read such an end right after a leader change and missed the
// last acknowledged records.
func TestNewLeaderListOffsetsWaitsForItsHighWatermark(t *testing.T) {
	const topic = "newleader"
	_, brokers, admin := replicatedCluster(t, topic)
	p := partitionMeta(t, admin, topic)
	leader, next, paused := p.Replicas[0], p.Replicas[1], p.Replicas[2]
	if p.Leader != leader {
		t.Fatalf("partition led by %d, want its first replica %d", p.Leader, leader)
	}
	// The last replica stops fetching: the high watermark stays where it
	// is while the next replica copies what the leader takes.
	resume := brokers[paused-1].PauseReplication()
	defer resume()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[leader-1].Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 20 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ncl, err := kgo.NewClient(kgo.SeedBrokers(brokers[next-1].Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer ncl.Close()
	nextAdmin := kadm.NewClient(ncl)
	testenv.Eventually(t, 20*time.Second, "the next replica holding the 20 records", func() bool {
		_, end := brokers[next-1].LogEnds(topic, 0)
		return end >= 20
	})
	brokers[leader-1].Stop()
	testenv.Eventually(t, 30*time.Second, "the next replica leading", func() bool {
		return partitionMeta(t, nextAdmin, topic).Leader == next
	})
	ends, err := nextAdmin.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	if !errors.Is(end.Err, kerr.OffsetNotAvailable) {
		t.Fatalf("ListOffsets latest on the new leader before its followers fetched: offset %d, error %v; want OFFSET_NOT_AVAILABLE", end.Offset, end.Err)
	}
	resume()
	testenv.Eventually(t, 30*time.Second, "the end offset once the follower fetched", func() bool {
		ends, err := nextAdmin.ListEndOffsets(context.Background(), topic)
		if err != nil {
			return false
		}
		end, _ := ends.Lookup(topic, 0)
		return end.Err == nil && end.Offset >= 20
	})
}
