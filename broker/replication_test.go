package broker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// replicatedCluster starts three brokers on a real ZooKeeper with
// min.insync.replicas 2 and creates topic with one partition on all three.
func replicatedCluster(t *testing.T, topic string) (connect string, brokers []*testenv.Broker, admin *kadm.Client) {
	t.Helper()
	connect, brokers = testenv.StartCluster(t, 3, testenv.WithConfig(func(c *broker.Config) {
		c.ReplicaLagMax = 3 * time.Second
		c.MinInsyncReplicas = 2
	}))
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr, brokers[1].Addr, brokers[2].Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	admin = kadm.NewClient(cl)
	// The broker answering may not see all three yet: it refuses until then.
	var last error
	testenv.Eventually(t, 10*time.Second, "creating the topic with 3 replicas", func() bool {
		resp, err := admin.CreateTopic(context.Background(), 1, 3, nil, topic)
		last = errors.Join(err, resp.Err)
		return last == nil || errors.Is(last, kerr.TopicAlreadyExists)
	})
	// Brokers learn of the topic through their ZooKeeper watch, a moment
	// after the one that created it: wait until Metadata shows it led and
	// fully in sync, whichever broker answers.
	testenv.Eventually(t, 30*time.Second, "Metadata shows "+topic+" with a leader and 3 in-sync replicas", func() bool {
		p := partitionMeta(t, admin, topic)
		return p.Leader >= 1 && len(p.ISR) == 3
	})
	return connect, brokers, admin
}

// partitionMeta is partition 0 of topic as Metadata describes it.
func partitionMeta(t *testing.T, admin *kadm.Client, topic string) kadm.PartitionDetail {
	t.Helper()
	m, err := admin.Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return m.Topics[topic].Partitions[0] // zero (leader 0) while the answering broker does not know the topic yet
}

// Metadata of a replicated partition lists its three replicas, all in
// sync, and a leader; the followers copy what the leader takes, so after
// acks=all writes every broker's log holds them.
func TestReplicatedPartitionMetadataAndISR(t *testing.T) {
	connect, _, admin := replicatedCluster(t, "replicated")
	p := partitionMeta(t, admin, "replicated")
	if len(p.Replicas) != 3 || len(p.ISR) != 3 || p.Leader < 1 || p.LeaderEpoch != 0 || len(p.OfflineReplicas) != 0 {
		t.Fatalf("partition metadata: %+v", p)
	}
	if !slices.Contains(p.Replicas, p.Leader) {
		t.Fatalf("leader %d is not a replica %v", p.Leader, p.Replicas)
	}
	// Metadata names the elected controller.
	s, err := cluster.DialZooKeeper(context.Background(), connect, testenv.Logger(t, slog.LevelWarn))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data, _, err := s.Conn.Get(s.Paths.Controller())
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := cluster.DecodeControllerNode(data)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "Metadata names the controller", func() bool {
		m, err := admin.BrokerMetadata(context.Background())
		return err == nil && m.Controller == ctrl.BrokerID
	})
}

// The test of the first part: with replication factor 3 and
// min.insync.replicas 2, records produced with acks=all while the
// partition's leader is stopped are all there afterwards, exactly once
// and in order, read from the new leader.
func TestReplicatedPartitionSurvivesItsLeader(t *testing.T) {
	const topic, n = "survivor", 600
	_, brokers, admin := replicatedCluster(t, topic)
	leader := partitionMeta(t, admin, topic).Leader

	producer, err := kgo.NewClient(
		kgo.SeedBrokers(brokers[0].Addr, brokers[1].Addr, brokers[2].Addr),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(50),
		kgo.RecordRetries(1000),
		kgo.RetryTimeout(60*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	var mu sync.Mutex
	var acked []int
	var failures []error
	var wg sync.WaitGroup
	killed := make(chan struct{})
	var killOnce sync.Once
	for i := range n {
		wg.Add(1)
		producer.Produce(context.Background(), &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, err)
				return
			}
			v, _ := strconv.Atoi(string(r.Value))
			acked = append(acked, v)
			if len(acked) == n/3 {
				killOnce.Do(func() { close(killed) })
			}
		})
		if i == n/2 {
			<-killed
			brokers[leader-1].Stop()
			t.Logf("stopped leader %d after %d acknowledged records", leader, n/3)
		}
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Logf("%d records failed (allowed: they were not acknowledged); first: %v", len(failures), failures[0])
	}
	if len(acked) < n/2 {
		t.Fatalf("only %d of %d records acknowledged", len(acked), n)
	}
	after := partitionMeta(t, admin, topic)
	if after.Leader == leader || after.Leader < 0 || after.LeaderEpoch < 1 || slices.Contains(after.ISR, leader) ||
		!slices.Equal(after.OfflineReplicas, []int32{leader}) {
		t.Fatalf("after stopping leader %d: %+v", leader, after)
	}

	// Every acknowledged record, exactly once, in order.
	var seeds []string
	for _, b := range brokers {
		if b.Addr != brokers[leader-1].Addr {
			seeds = append(seeds, b.Addr)
		}
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	want := map[int]bool{}
	for _, v := range acked {
		want[v] = true
	}
	seen := map[int]int{}
	last := -1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for covered := 0; covered < len(want); {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records before the deadline", covered, len(want))
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			v, _ := strconv.Atoi(string(r.Value))
			if v <= last {
				t.Errorf("record %d at offset %d after record %d: out of order or repeated", v, r.Offset, last)
			}
			last = v
			seen[v]++
			if want[v] && seen[v] == 1 {
				covered++
			}
		})
	}
	for v, c := range seen {
		if c != 1 {
			t.Errorf("record %d read %d times", v, c)
		}
	}
}

// acks=all is refused with NOT_ENOUGH_REPLICAS, writing nothing, while the
// ISR is smaller than min.insync.replicas.
func TestAcksAllNeedsMinInsyncReplicas(t *testing.T) {
	const topic = "min-isr"
	_, brokers, admin := replicatedCluster(t, topic)
	p := partitionMeta(t, admin, topic)
	for _, id := range p.Replicas {
		if id != p.Leader {
			brokers[id-1].Stop()
		}
	}
	testenv.Eventually(t, 20*time.Second, "the isr shrinks to the leader", func() bool {
		return len(partitionMeta(t, admin, topic).ISR) == 1
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[p.Leader-1].Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr()
	if err != kerr.NotEnoughReplicas {
		t.Fatalf("acks=all with an isr of 1 and min.insync.replicas 2: %v, want NOT_ENOUGH_REPLICAS", err)
	}
}

// replicaNamed returns a topic name whose partition 0 is first placed on
// a broker other than avoid, among brokers 1..3.
func replicaNamed(t *testing.T, prefix string, avoid int32) string {
	t.Helper()
	brokers := []cluster.Broker{{ID: 1}, {ID: 2}, {ID: 3}}
	for i := range 100 {
		name := prefix + strconv.Itoa(i)
		rs, err := cluster.SpreadReplicas(name, 1, 3, brokers)
		if err != nil {
			t.Fatal(err)
		}
		if rs[0][0] != avoid {
			return name
		}
	}
	t.Fatal("no name found")
	return ""
}

// silentReplica registers broker id 3 in the cluster without a broker
// behind it: a replica that is alive for ZooKeeper but never fetches.
func silentReplica(t *testing.T, connect string) *cluster.ZooKeeper {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	z, err := cluster.JoinZooKeeper(ctx, connect, cluster.Broker{ID: 3, Host: "127.0.0.1", Port: 1},
		testenv.Logger(t, slog.LevelWarn), cluster.WithSessionTimeout(testenv.ClusterSessionTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}

// Consumers see nothing above the high watermark, the smallest fsynced
// end over the ISR: while an in-sync replica has not fetched, records
// taken with acks=1 stay invisible (ListOffsets and Fetch), and they
// appear once the controller takes that replica out of the ISR.
func TestHighWatermarkIsTheISRsFsyncedEnd(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	cfg := testenv.WithConfig(func(c *broker.Config) { c.ReplicaLagMax = time.Hour })
	b1 := testenv.StartClusterBroker(t, connect, 1, cfg)
	b2 := testenv.StartClusterBroker(t, connect, 2, cfg)
	silent := silentReplica(t, connect)
	topic := replicaNamed(t, "hw", 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr, b2.Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	testenv.Eventually(t, 10*time.Second, "creating the topic with 3 replicas", func() bool {
		resp, err := admin.CreateTopic(context.Background(), 1, 3, nil, topic)
		return err == nil && (resp.Err == nil || errors.Is(resp.Err, kerr.TopicAlreadyExists))
	})
	const n = 20
	for i := range n {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Both real brokers hold all 20 records (a follower copies flushed
	// data only, so the leader flushed them too).
	segment := func(b *testenv.Broker) int64 {
		fi, err := os.Stat(filepath.Join(b.DataDir, topic+"-0", fmt.Sprintf("%020d.log", 0)))
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	testenv.Eventually(t, 20*time.Second, "the follower copies every record", func() bool {
		return segment(b1) > 0 && segment(b1) == segment(b2)
	})
	ends, err := admin.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != 0 {
		t.Fatalf("latest offset %d while replica 3 has fetched nothing, want 0", o.Offset)
	}
	silent.Close()
	testenv.Eventually(t, 20*time.Second, "the high watermark reaches the end once replica 3 left the isr", func() bool {
		ends, err := admin.ListEndOffsets(context.Background(), topic)
		o, _ := ends.Lookup(topic, 0)
		return err == nil && o.Offset == n
	})
	got := consumeValues(t, []string{b1.Addr, b2.Addr}, topic, n)
	for i, v := range got {
		if v != strconv.Itoa(i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
}

// A replica that is alive but does not fetch leaves the ISR after
// replica.lag.time.max.ms, and acks=all, which waited for it, is answered.
func TestLaggingReplicaLeavesTheISR(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	cfg := testenv.WithConfig(func(c *broker.Config) { c.ReplicaLagMax = time.Second; c.MinInsyncReplicas = 2 })
	b1 := testenv.StartClusterBroker(t, connect, 1, cfg)
	b2 := testenv.StartClusterBroker(t, connect, 2, cfg)
	silentReplica(t, connect)
	topic := replicaNamed(t, "lag", 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr, b2.Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	testenv.Eventually(t, 10*time.Second, "creating the topic with 3 replicas", func() bool {
		resp, err := admin.CreateTopic(context.Background(), 1, 3, nil, topic)
		return err == nil && (resp.Err == nil || errors.Is(resp.Err, kerr.TopicAlreadyExists))
	})
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("waits for the isr")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The produce was answered after the leader's ISR change; the broker
	// answering Metadata may learn of it a moment later.
	testenv.Eventually(t, 10*time.Second, "metadata shows the silent replica out of the isr", func() bool {
		p := partitionMeta(t, admin, topic)
		return !slices.Contains(p.ISR, 3) && len(p.ISR) == 2 && slices.Contains(p.Replicas, 3) && len(p.OfflineReplicas) == 0
	})
}

// A follower that was stopped leaves the ISR; restarted on its data, it
// catches up and the leader takes it back into the ISR.
func TestRestartedFollowerRejoinsTheISR(t *testing.T) {
	const topic = "rejoin"
	connect, brokers, admin := replicatedCluster(t, topic)
	p := partitionMeta(t, admin, topic)
	var follower int32
	for _, id := range p.Replicas {
		if id != p.Leader {
			follower = id
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[p.Leader-1].Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 10)
	old := brokers[follower-1]
	old.Stop()
	testenv.Eventually(t, 20*time.Second, "the stopped follower leaves the isr", func() bool {
		return len(partitionMeta(t, admin, topic).ISR) == 2
	})
	produce(10, 20)
	testenv.StartClusterBroker(t, connect, follower, testenv.WithDataDir(old.DataDir), testenv.WithAddr(old.Addr),
		testenv.WithConfig(func(c *broker.Config) { c.ReplicaLagMax = 3 * time.Second; c.MinInsyncReplicas = 2 }))
	testenv.Eventually(t, 30*time.Second, "the restarted follower rejoins the isr", func() bool {
		return len(partitionMeta(t, admin, topic).ISR) == 3
	})
	produce(20, 30)
}

// consumeValues reads n records of topic from the start.
func consumeValues(t *testing.T, seeds []string, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(got), n)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// The topic config min.insync.replicas overrides the broker default, and
// applies to a topic with one replica too (its ISR is that replica).
func TestMinInsyncReplicasTopicConfig(t *testing.T) {
	const topic = "strict"
	_, brokers, admin := replicatedCluster(t, topic)
	set := func(topic, v string) {
		t.Helper()
		resps, err := admin.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Name: "min.insync.replicas", Value: &v}}, topic)
		if err == nil {
			_, err = resps.On(topic, nil)
		}
		if err != nil {
			t.Fatalf("setting min.insync.replicas=%s on %s: %v", v, topic, err)
		}
	}
	set(topic, "3")
	p := partitionMeta(t, admin, topic)
	for _, id := range p.Replicas {
		if id != p.Leader {
			brokers[id-1].Stop()
			break
		}
	}
	testenv.Eventually(t, 20*time.Second, "the isr shrinks to 2", func() bool {
		return len(partitionMeta(t, admin, topic).ISR) == 2
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[p.Leader-1].Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The broker answering may still have the old configs for a moment.
	testenv.Eventually(t, 10*time.Second, "acks=all refused with NOT_ENOUGH_REPLICAS", func() bool {
		return cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr() == kerr.NotEnoughReplicas
	})
	set(topic, "2")
	testenv.Eventually(t, 10*time.Second, "acks=all accepted with min.insync.replicas 2", func() bool {
		return cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("y")}).FirstErr() == nil
	})
}

// On a standalone broker a topic has one replica, so acks=all needs
// min.insync.replicas 1: a broker default of 2 refuses acks=all, and acks=1
// still works. (A topic's own value above its replication factor is
// refused when set: broker/settings/bounds.go.)
func TestMinInsyncReplicasStandalone(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.MinInsyncReplicas = 2 }))
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("single"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if resp, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, nil, "single"); err != nil || resp.Err != nil {
		t.Fatalf("creating the topic: %v %v", err, resp.Err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != kerr.NotEnoughReplicas {
		t.Fatalf("acks=all: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("single"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if err := one.ProduceSync(context.Background(), &kgo.Record{Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatalf("acks=1: %v", err)
	}
}
