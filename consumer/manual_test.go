package consumer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/consumer"
	"github.com/tributary-io/tributary/internal/testenv"
)

// With MarkManually only what MarkProcessed marked is committed, by the
// periodic commit, the release commit of a rebalance (after OnRevoke) and
// Close; what was delivered but not marked goes to the next owner again.
func TestMarkManually(t *testing.T) {
	connect, brokers := testenv.StartCluster(t, 1)
	client := newClient(t, brokers[0].Addr)
	const topic = "manual"
	testenv.CreateTopic(t, client, topic, 2)
	testenv.ProduceRange(t, client, topic, 0, 40)

	// Partition → offsets delivered to a (a rebalance may deliver some
	// again), and a's OnRevoke calls.
	var mu sync.Mutex
	got := map[int32]map[int64]bool{0: {}, 1: {}}
	type revocation struct {
		revoked   map[string][]int32
		committed map[int32]int64 // the registry when OnRevoke ran
	}
	var revocations []revocation
	armed := false // OnRevoke records and marks from the rebalance b causes on
	var a *consumer.Group
	a = join(t, consumer.Config{
		ZooKeeper: connect, Group: "g", Topics: []string{topic}, ID: "a", MarkManually: true,
		OnRevoke: func(ctx context.Context, revoked map[string][]int32) {
			mu.Lock()
			on := armed
			mu.Unlock()
			if !on {
				return // a rebalance of a alone (topic or broker registry changed)
			}
			r := revocation{revoked, committed(t, connect, "g", topic, 2)}
			mu.Lock()
			revocations = append(revocations, r)
			mu.Unlock()
			// Work in flight finishes now: partition 0 up to offset 5.
			a.MarkProcessed(topic, 0, 5)
		},
	})
	go func() {
		for {
			rec, err := a.Next(context.Background())
			if err != nil {
				return
			}
			mu.Lock()
			got[rec.Partition][rec.Offset] = true
			mu.Unlock()
		}
	}()
	testenv.Eventually(t, 20*time.Second, "a received all 40 records", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got[0])+len(got[1]) == 40
	})
	mu.Lock()
	ends := map[int32]int64{0: int64(len(got[0])), 1: int64(len(got[1]))}
	mu.Unlock()
	if ends[0] < 6 || ends[1] == 0 {
		t.Fatalf("records are spread %v over the partitions; the test needs at least 6 in partition 0 and one in 1", ends)
	}

	// Periodic commit: only the mark. Marks never go back, and marks of
	// partitions not owned are ignored.
	a.MarkProcessed(topic, 0, 3)
	a.MarkProcessed(topic, 0, 1)
	a.MarkProcessed("other", 0, 7)
	a.MarkProcessed(topic, 9, 7)
	time.Sleep(500 * time.Millisecond) // several commit intervals
	if c := committed(t, connect, "g", topic, 2); len(c) != 1 || c[0] != 3 {
		t.Fatalf("after marking partition 0 up to 3 the registry holds %v, want only 0:3", c)
	}

	// A rebalance: b takes partition 1. a's OnRevoke runs before the
	// release commit, and what it marks is committed by that commit.
	mu.Lock()
	armed = true
	mu.Unlock()
	var bgot sync.Map // partition → first offset delivered to b
	b := join(t, consumer.Config{ZooKeeper: connect, Group: "g", Topics: []string{topic}, ID: "b", MarkManually: true})
	go func() {
		for {
			rec, err := b.Next(context.Background())
			if err != nil {
				return
			}
			bgot.LoadOrStore(rec.Partition, rec.Offset)
			b.MarkProcessed(rec.Topic, rec.Partition, rec.Offset+1)
		}
	}()
	waitStable(t, connect, "g", topic, 2, []string{"a", "b"}, a, b)
	mu.Lock()
	if len(revocations) == 0 {
		mu.Unlock()
		t.Fatal("OnRevoke was not called at the rebalance")
	}
	first := revocations[0]
	mu.Unlock()
	if ps := first.revoked[topic]; len(ps) != 2 || ps[0] != 0 || ps[1] != 1 {
		t.Fatalf("OnRevoke got %v, want both partitions of %s", first.revoked, topic)
	}
	if first.committed[0] != 3 {
		t.Fatalf("OnRevoke saw the registry at %v: the release commit ran before it", first.committed)
	}
	if c := committed(t, connect, "g", topic, 2); c[0] != 5 {
		t.Fatalf("after the rebalance the registry holds %v, want 0:5 (marked in OnRevoke)", c)
	}

	// b owns partition 1, which a never marked: b gets it from the start.
	testenv.Eventually(t, 20*time.Second, "b received partition 1", func() bool {
		_, ok := bgot.Load(int32(1))
		return ok
	})
	if o, _ := bgot.Load(int32(1)); o.(int64) != 0 {
		t.Fatalf("b's first record of partition 1 is at offset %d, want 0: unmarked records are delivered again", o)
	}
	testenv.Eventually(t, 20*time.Second, "b's marks committed", func() bool {
		return committed(t, connect, "g", topic, 2)[1] == ends[1]
	})

	// Close: OnRevoke once more, then the final commit of the marks.
	a.MarkProcessed(topic, 0, ends[0]-1)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := len(revocations)
	mu.Unlock()
	if c := committed(t, connect, "g", topic, 2); c[0] != ends[0]-1 || n < 2 {
		t.Fatalf("after Close the registry holds %v (want 0:%d) and OnRevoke ran %d times (want at least 2)", c, ends[0]-1, n)
	}
}
