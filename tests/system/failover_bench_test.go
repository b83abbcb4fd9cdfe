package system_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// BenchmarkLeaderFailover measures how long a replicated partition has no
// leader a producer can write to: three `tributary broker` processes on a
// real ZooKeeper, a topic of one partition with three replicas and
// min.insync.replicas 2; each iteration kill -9s the partition's leader
// and times from the kill to the first acks=all produce the new leader
// acknowledges, reported as failover-s. The killed broker is restarted and
// back in the ISR before the next iteration, outside the timing.
//
// The ZooKeeper session timeout dominates the figure: the controller
// learns that a killed broker is gone only when ZooKeeper expires its
// session, cluster.DefaultBrokerSessionTimeout (4 s; `tributary broker
// --zookeeper-session-timeout`) after its last heartbeat, at ZooKeeper's
// first tick past it. Election, the new leader taking the
// partition and the client refreshing its metadata add the rest.
func BenchmarkLeaderFailover(b *testing.B) {
	const topic = "failover"
	zk := testenv.StartZooKeeper(b)
	addrs := map[int32]string{}
	procs := map[int32]*testenv.Process{}
	dirs := map[int32]string{}
	start := func(id int32) {
		procs[id] = testenv.StartProcess(b, "broker", "--id", strconv.Itoa(int(id)), "--zookeeper", zk,
			"--listen", addrs[id], "--data-dir", dirs[id], "--min-insync-replicas", "2",
			"--replica-lag-time-max", "5s", "--auto-leader-rebalance=false")
		testenv.WaitListening(b, procs[id], addrs[id], 60*time.Second)
	}
	var seeds []string
	for id := int32(1); id <= 3; id++ {
		addrs[id], dirs[id] = testenv.FreeAddr(b), b.TempDir()
		seeds = append(seeds, addrs[id])
		start(id)
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		b.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	partition := func() (kadm.PartitionDetail, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx, topic)
		if err != nil || md.Topics[topic].Err != nil || len(md.Topics[topic].Partitions) != 1 {
			return kadm.PartitionDetail{}, false
		}
		return md.Topics[topic].Partitions[0], true
	}
	inSync := func() bool {
		p, ok := partition()
		return ok && p.Err == nil && p.Leader > 0 && len(p.ISR) == 3
	}
	testenv.Eventually(b, 60*time.Second, "three brokers registered", func() bool {
		md, err := adm.BrokerMetadata(context.Background())
		return err == nil && len(md.Brokers) == 3
	})
	if _, err := adm.CreateTopic(context.Background(), 1, 3, nil, topic); err != nil {
		b.Fatal(err)
	}
	testenv.Eventually(b, 60*time.Second, "the partition led with three replicas in sync", inSync)

	// A fresh metadata view soon after a failure, as a latency-minded
	// application would configure its client.
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	produce := func(i int) error {
		return cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(fmt.Sprintf("record-%d", i))}).FirstErr()
	}
	if err := produce(-1); err != nil {
		b.Fatal(err)
	}

	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, ok := partition()
		if !ok {
			b.Fatal("no metadata for the partition")
		}
		leader := p.Leader
		killed := time.Now()
		procs[leader].Kill()
		if err := produce(i); err != nil {
			b.Fatalf("the first produce after killing leader %d: %v", leader, err)
		}
		took := time.Since(killed)
		total += took
		b.StopTimer()
		b.Logf("iteration %d: leader %d killed, acks=all produce acknowledged after %v", i, leader, took.Round(time.Millisecond))
		start(leader)
		testenv.Eventually(b, 60*time.Second, fmt.Sprintf("broker %d back in the ISR", leader), inSync)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(total.Seconds()/float64(b.N), "failover-s")
	b.ReportMetric(cluster.DefaultBrokerSessionTimeout.Seconds(), "zk-session-s")
}
