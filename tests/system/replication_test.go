package system_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestReplicatedLeaderKilled runs three `tributary broker` processes with
// min.insync.replicas 2, creates a topic with `topics create
// --replication-factor 3`, and kills the partition's leader with SIGKILL
// while a kgo producer writes with acks=all: the controller elects another
// in-sync replica once the dead broker's ZooKeeper session expires, kgo
// follows it, and a consumer then reads every acknowledged record exactly
// once and in order.
func TestReplicatedLeaderKilled(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	zk := testenv.StartZooKeeper(t)
	addrs := []string{testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)}
	var procs []*testenv.Process
	for i, addr := range addrs {
		p := testenv.StartProcess(t, "broker", "--id", strconv.Itoa(i+1), "--zookeeper", zk,
			"--listen", addr, "--data-dir", t.TempDir(), "--min-insync-replicas", "2", "--replica-lag-time-max", "10s")
		testenv.WaitListening(t, p, addr, 60*time.Second)
		procs = append(procs, p)
	}
	for _, addr := range addrs {
		waitBrokers(t, addr, 3)
	}
	out := testenv.Run(t, "", 0, "topics", "create", "--brokers", addrs[0], "--partitions", "1", "--replication-factor", "3", "orders")
	if want := "created topic orders with 1 partitions\n"; out != want {
		t.Fatalf("topics create: %q, want %q", out, want)
	}
	waitTopic(t, addrs[0], "orders", 1)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("orders"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	part := md.Topics["orders"].Partitions[0]
	if len(part.Replicas) != 3 || len(part.ISR) != 3 {
		t.Fatalf("orders-0: %+v, want 3 replicas in sync", part)
	}
	leader := part.Leader

	const n = 400
	var mu sync.Mutex
	var acked []int
	var killedAt, firstAfter time.Time // failover: kill to the next acknowledgement
	var wg sync.WaitGroup
	third := make(chan struct{})
	for i := range n {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				return // not acknowledged: may be missing
			}
			v, _ := strconv.Atoi(string(r.Value))
			mu.Lock()
			defer mu.Unlock()
			if !killedAt.IsZero() && firstAfter.IsZero() {
				firstAfter = time.Now()
			}
			if acked = append(acked, v); len(acked) == n/3 {
				close(third)
			}
		})
		if i == n/2 {
			<-third
			mu.Lock()
			killedAt = time.Now()
			mu.Unlock()
			procs[leader-1].Kill()
		}
	}
	wg.Wait()
	if len(acked) < n/2 {
		t.Fatalf("%d of %d records acknowledged", len(acked), n)
	}

	var live []string
	for i, addr := range addrs {
		if int32(i+1) != leader {
			live = append(live, addr)
		}
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(live...), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := map[int]int{}
	var order []int
	for remaining := len(acked); remaining > 0; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d acknowledged records not read", remaining)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, _ := strconv.Atoi(string(r.Value))
			if seen[v]++; seen[v] == 1 && slices.Contains(acked, v) {
				remaining--
			}
			order = append(order, v)
		})
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("record %d follows record %d: out of order or repeated", order[i], order[i-1])
		}
	}
	t.Logf("%d acknowledged, %d read, leader %d killed; first acknowledgement %v after the kill (ZooKeeper session timeout included)",
		len(acked), len(order), leader, firstAfter.Sub(killedAt).Round(time.Millisecond))
}
