package cluster_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A partition moves to two other brokers while an acks=all producer keeps
// writing: the added replicas catch up by fetching, the leadership moves
// to the first of them, the old replicas leave, ZooKeeper records the
// new replicas with no reassignment left, and each new replica serves
// every acknowledged record in order.
//
// When the leadership moves, the other new replica may hold records the
// new leader has not fetched yet; it follows again only once it
// truncates to the new leader's log (leader-epoch truncation, developed
// in parallel). Before that, an unlucky run stalls acks=all here.
func TestReassignPartitionOnline(t *testing.T) {
	c := startReplCluster(t, 4, 0)
	adm := c.admin(t)
	two := "2"
	if _, err := adm.CreateTopic(context.Background(), 1, 2, map[string]*string{"min.insync.replicas": &two}, "moving"); err != nil {
		t.Fatal(err)
	}
	var pd kadm.PartitionDetail
	testenv.Eventually(t, 10*time.Second, "the partition is led with two in-sync replicas", func() bool {
		var ok bool
		pd, ok = partition(t, adm, "moving", 0)
		return ok && pd.Leader >= 0 && len(pd.ISR) == 2
	})
	var target []int32
	for id := int32(1); id <= 4; id++ {
		if !slices.Contains(pd.Replicas, id) {
			target = append(target, id)
		}
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic("moving"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var mu sync.Mutex
	var acked []int
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr()
			cancel()
			if err == nil {
				mu.Lock()
				acked = append(acked, i)
				mu.Unlock()
			}
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	testenv.Eventually(t, 10*time.Second, "records acknowledged before the move", func() bool { return count() >= 50 })

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moving", 0, target)
	res, err := adm.AlterPartitionAssignments(context.Background(), req)
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterPartitionReassignments: %v %v", err, res.Error())
	}
	before := count()
	testenv.Eventually(t, 60*time.Second, "the move completes", func() bool {
		l, err := adm.ListPartitionReassignments(context.Background(), kadm.TopicsSet{"moving": {0: {}}})
		pd, ok := partition(t, adm, "moving", 0)
		return err == nil && len(l) == 0 && ok && slices.Equal(pd.Replicas, target) && pd.Leader == target[0]
	})
	testenv.Eventually(t, 20*time.Second, "records acknowledged after the move", func() bool { return count() >= before+50 })
	close(stop)
	<-produced

	s := session(t, c.connect)
	data, _, err := s.Conn.Get(s.Paths.Topic("moving"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := cluster.DecodeTopicNode(data)
	if err != nil || !slices.Equal(n.Replicas[0], target) || n.Leaders[0] != target[0] || len(n.AddingReplicas) > 0 || len(n.RemovingReplicas) > 0 {
		t.Fatalf("topic node after the move: %s (%v)", data, err)
	}

	// Each new replica, once it leads, serves every acknowledged record.
	checkAll(t, c.brokers[target[0]].Addr, acked)
	c.brokers[target[0]].Stop()
	testenv.Eventually(t, 20*time.Second, "the second new replica leads", func() bool {
		pd, ok := partition(t, adm, "moving", 0)
		return ok && pd.Leader == target[1]
	})
	checkAll(t, c.brokers[target[1]].Addr, acked)
}

// checkAll reads the partition from its start through seed and checks
// that every acknowledged value is there, in order, once.
func checkAll(t *testing.T, seed string, acked []int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics("moving"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := map[int]bool{}
	last := -1
	for len(seen) < len(acked) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records", len(seen), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, _ := strconv.Atoi(string(r.Value))
			if v <= last {
				t.Fatalf("record %d after %d", v, last)
			}
			last = v
			if slices.Contains(acked, v) {
				seen[v] = true
			}
		})
	}
}
