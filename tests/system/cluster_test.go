package system_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestClusterBrokerKilled runs three `tributary broker` processes on one
// ZooKeeper, kills one with SIGKILL, and checks what a user sees: Metadata
// stops listing it once its ZooKeeper session expires, the partitions of the
// other two keep serving, and restarted on its data directory it comes back
// with its records.
func TestClusterBrokerKilled(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	zk := testenv.StartZooKeeper(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	addrs := []string{testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)}
	start := func(i int) *testenv.Process {
		p := testenv.StartProcess(t, "broker", "--id", strconv.Itoa(i+1), "--zookeeper", zk,
			"--listen", addrs[i], "--data-dir", dirs[i], "--flush-interval", "20ms")
		testenv.WaitListening(t, p, addrs[i], 60*time.Second)
		return p
	}
	procs := []*testenv.Process{start(0), start(1), start(2)}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[0]), kgo.DefaultProduceTopic("views"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	waitBrokers(t, addrs[0], 3)
	if _, err := adm.CreateTopic(ctx, 12, 1, nil, "views"); err != nil {
		t.Fatal(err)
	}
	topics := waitTopic(t, addrs[0], "views", 12)
	leaders := map[int32]int32{}
	perBroker := map[int32]int{}
	for _, p := range topics["views"].Partitions {
		leaders[p.Partition] = p.Leader
		perBroker[p.Leader]++
	}
	if len(perBroker) != 3 {
		t.Fatalf("12 partitions on brokers %v, want all three", perBroker)
	}
	for p := range int32(12) {
		r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("before-%d", p))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
	}

	procs[2].Kill() // broker 3, no clean shutdown
	waitBrokers(t, addrs[0], 2)
	survivors := 0
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for p, leader := range leaders {
		if leader == 3 {
			continue
		}
		r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("during-%d", p))}
		if err := cl.ProduceSync(pctx, r).FirstErr(); err != nil {
			t.Fatalf("partition %d on live broker %d: %v", p, leader, err)
		}
		survivors++
	}
	if survivors != 12-perBroker[3] {
		t.Fatalf("%d partitions served while broker 3 was down, want %d", survivors, 12-perBroker[3])
	}

	procs[2] = start(2)
	waitBrokers(t, addrs[0], 3)
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs[0]), kgo.ConsumeTopics("views"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[string]bool{}
	want := 12 + survivors
	cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
	defer ccancel()
	for len(got) < want && cctx.Err() == nil {
		cons.PollFetches(cctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	for p := range int32(12) {
		if !got[fmt.Sprintf("before-%d", p)] {
			t.Fatalf("record of partition %d (broker %d) missing after the restart; have %d of %d", p, leaders[p], len(got), want)
		}
	}
}

// waitBrokers waits until the broker at seed lists n brokers in Metadata.
// Each poll is a new client: a client's own view of the cluster is cached.
func waitBrokers(t *testing.T, seed string, n int) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("Metadata from %s lists %d brokers", seed, n), func() bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
		if err != nil {
			t.Fatal(err)
		}
		md, err := kadm.NewClient(cl).BrokerMetadata(context.Background())
		cl.Close()
		return err == nil && len(md.Brokers) == n
	})
}

// waitTopic waits until the broker at seed describes topic with n
// partitions: the other brokers learn of a new topic through their
// ZooKeeper watch, a moment after the one that created it.
func waitTopic(t *testing.T, seed, topic string, n int) kadm.TopicDetails {
	t.Helper()
	var topics kadm.TopicDetails
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%s describes topic %s with %d partitions", seed, topic, n), func() bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
		if err != nil {
			t.Fatal(err)
		}
		topics, err = kadm.NewClient(cl).ListTopics(context.Background(), topic)
		cl.Close()
		return err == nil && len(topics[topic].Partitions) == n
	})
	return topics
}
