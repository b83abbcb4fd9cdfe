package broker_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// leaderOf is a cluster view in which this broker (id 1) leads partition
// 0 of topic, replicated on brokers 1 and 2 and both in the ISR, with no
// controller to change it: broker 2 is whoever sends Fetch with replica
// id 2.
type leaderOf struct {
	*cluster.Standalone
	topic cluster.Topic
}

func newLeaderOf(dir, topic string) func(self cluster.Broker) (cluster.Metadata, error) {
	return func(self cluster.Broker) (cluster.Metadata, error) {
		self.ID = 1
		s, err := cluster.OpenStandalone(dir, self)
		if err != nil {
			return nil, err
		}
		return &leaderOf{s, cluster.Topic{
			Name: topic, Leaders: []int32{1}, Replicas: [][]int32{{1, 2}},
			States: []cluster.PartitionState{{Version: 1, Leader: 1, ISR: []int32{1, 2}}},
		}}, nil
	}
}

func (m *leaderOf) Topic(name string) (cluster.Topic, bool) {
	if name == m.topic.Name {
		return m.topic, true
	}
	return m.Standalone.Topic(name)
}

func (m *leaderOf) Topics() []cluster.Topic { return append(m.Standalone.Topics(), m.topic) }

// followerFetch is broker 2's fetch at offset: it tells the leader that
// broker 2 holds everything below offset.
func followerFetch(t *testing.T, cl *kgo.Client, topic string, offset int64) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = 2
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = offset, -1, -1, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("follower fetch: error code %d", code)
	}
}

func endOffset(t *testing.T, admin *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := admin.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ends.Lookup(topic, 0)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	return o.Offset
}

// A leader restarted on its data serves consumers up to the high
// watermark it had before at once, from replication-offset-checkpoint,
// rather than nothing until its in-sync follower fetches again.
func TestHighWatermarkSurvivesALeaderRestart(t *testing.T) {
	const topic, n = "checkpointed", 12
	dir := t.TempDir()
	opts := []testenv.BrokerOption{testenv.WithDataDir(dir), testenv.WithMetadata(newLeaderOf(dir, topic)),
		testenv.WithConfig(func(c *broker.Config) { c.ReplicaLagMax = time.Hour })}
	b := testenv.StartBroker(t, opts...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	admin := kadm.NewClient(cl)
	if got := endOffset(t, admin, topic); got != 0 {
		t.Fatalf("end offset %d before the follower fetched, want 0", got)
	}
	followerFetch(t, cl, topic, n)
	testenv.Eventually(t, 10*time.Second, "the high watermark reaches the follower's offset once flushed", func() bool {
		return endOffset(t, admin, topic) == n
	})
	cl.Close()
	b.Stop()

	b = testenv.StartBroker(t, append(opts, testenv.WithAddr(b.Addr))...)
	cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := endOffset(t, kadm.NewClient(cl), topic); got != n {
		t.Fatalf("after the restart, before the follower fetched: end offset %d, want %d", got, n)
	}
	if got := consumeValues(t, []string{b.Addr}, topic, n); got[n-1] != strconv.Itoa(n-1) {
		t.Fatalf("read %q", got)
	}
}
