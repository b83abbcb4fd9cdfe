package cluster_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestManyPartitionsFailover: with a replicated topic of 300 partitions,
// the controller moves the leaderships and ISR places of a broker that
// died in a few multis, not one per partition (each a ZooKeeper write in
// turn: about 20 s past the session timeout for 1,000 partitions); and
// when the broker is back, the leaders' ISR changes cost the three views
// a few ZooKeeper reads each, not a re-read of every partition (at 3,000
// partitions a refresh took seconds, every ISR change refreshed, and
// partitions rejoined one every four), written many to a multi.
func TestManyPartitionsFailover(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	members := map[int32]*cluster.ZooKeeper{1: join(t, connect, 1), 2: join(t, connect, 2), 3: join(t, connect, 3)}
	for _, m := range members {
		testenv.Eventually(t, 10*time.Second, "three brokers", func() bool { return len(m.Brokers()) == 3 })
	}
	const n = 300
	created, err := members[1].CreateReplicatedTopic(context.Background(), "many", n, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, connect)
	var ctrl cluster.ControllerNode
	testenv.Eventually(t, 20*time.Second, "a controller is elected", func() bool {
		data, _, err := s.Conn.Get(s.Paths.Controller())
		if err != nil {
			return false
		}
		ctrl, err = cluster.DecodeControllerNode(data)
		return err == nil
	})
	dead := int32(1)
	if ctrl.BrokerID == dead {
		dead = 2
	}
	led := 0
	for p := range created.Replicas {
		if created.Replicas[p][0] == dead {
			led++
		}
	}
	multis := cluster.ControllerMultis()
	members[dead].Close()
	delete(members, dead)
	for id, m := range members {
		testenv.Eventually(t, 60*time.Second, "every partition led by a live broker, the dead one out of every ISR", func() bool {
			tp, ok := m.Topic("many")
			if !ok {
				return false
			}
			for p := range int32(n) {
				st, ok := tp.StateOf(p)
				if !ok || st.Leader < 0 || st.Leader == dead || slices.Contains(st.ISR, dead) {
					return false
				}
			}
			return true
		})
		_ = id
	}
	writes := cluster.ControllerMultis() - multis
	t.Logf("%d leaderships and %d ISR places moved in %d controller multis", led, n-led, writes)
	if writes > 20 {
		t.Errorf("the controller sent %d multis for the %d partitions of one dead broker: not batched", writes, n)
	}

	// The broker returns; each leader puts it back into its ISRs.
	members[dead] = join(t, connect, dead)
	for _, m := range members {
		testenv.Eventually(t, 10*time.Second, "three brokers", func() bool { return len(m.Brokers()) == 3 })
	}
	reads := cluster.WatchReads()
	multis, conflicts := cluster.ISRMultis(), cluster.ISRConflicts()
	changes := 0
	for id, m := range members {
		if id == dead {
			continue
		}
		tp, _ := m.Topic("many")
		var batch []cluster.ISRChange
		for p := range int32(n) {
			st, ok := tp.StateOf(p)
			if !ok || st.Leader != id {
				continue
			}
			batch = append(batch, cluster.ISRChange{Topic: "many", Partition: p, LeaderEpoch: st.LeaderEpoch,
				ISR: append(slices.Clone(st.ISR), dead), MinISR: 2})
		}
		for i, r := range m.SetISRs(context.Background(), batch) {
			if r.Err != nil {
				t.Fatalf("partition %d: %v", batch[i].Partition, r.Err)
			}
		}
		changes += len(batch)
		now, _ := m.Topic("many")
		for _, c := range batch {
			if got, _ := now.StateOf(c.Partition); !slices.Contains(got.ISR, dead) {
				t.Fatalf("partition %d: the leader's view does not show its own ISR change: %+v", c.Partition, got)
			}
		}
	}
	// Two leaders, each at most a few hundred changes: 200 to a multi.
	sent, failed := cluster.ISRMultis()-multis, cluster.ISRConflicts()-conflicts
	t.Logf("%d ISR changes in %d multis, %d of them failed on a concurrent write", changes, sent, failed)
	if sent > 4 || failed > 0 {
		t.Errorf("%d ISR changes took %d multis, %d failed: want at most 4, none failed", changes, sent, failed)
	}
	// Each change fires the watch of its node in three views; let them
	// settle before counting what they read.
	for _, m := range members {
		testenv.Eventually(t, 30*time.Second, "every view shows the full ISRs", func() bool {
			tp, _ := m.Topic("many")
			for p := range int32(n) {
				if st, _ := tp.StateOf(p); len(st.ISR) != 3 {
					return false
				}
			}
			return true
		})
	}
	read := cluster.WatchReads() - reads
	t.Logf("%d ISR changes cost %d reads through the views' watches (three views)", changes, read)
	if changes < n/2 || read > int64(10*changes) {
		t.Errorf("%d ISR changes cost %d ZooKeeper reads: the views re-read every partition", changes, read)
	}
}

// TestCreateReplicatedTopicBeyondOneMulti: a replicated topic whose nodes
// pass what one ZooKeeper request may carry (3,000 partitions at RF 3, about
// 1.3 MB) is created in several multis; as one, ZooKeeper closed the
// connection and the topic could not be created.
func TestCreateReplicatedTopicBeyondOneMulti(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	members := []*cluster.ZooKeeper{join(t, connect, 1), join(t, connect, 2), join(t, connect, 3)}
	for _, m := range members {
		testenv.Eventually(t, 10*time.Second, "three brokers", func() bool { return len(m.Brokers()) == 3 })
	}
	const n = 3000
	created, err := members[0].CreateReplicatedTopic(context.Background(), "big", n, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if created.Partitions() != n {
		t.Fatalf("created %d partitions, want %d", created.Partitions(), n)
	}
	for _, m := range members {
		testenv.Eventually(t, 30*time.Second, "every partition has its state and leader", func() bool {
			tp, ok := m.Topic("big")
			if !ok || tp.Partitions() != n {
				return false
			}
			for p := range int32(n) {
				if st, ok := tp.StateOf(p); !ok || st.Leader < 0 || len(st.ISR) != 3 {
					return false
				}
			}
			return true
		})
	}
	if _, err := members[1].CreateReplicatedTopic(context.Background(), "big", n, 3, nil); !errors.Is(err, cluster.ErrTopicExists) {
		t.Fatalf("creating it again: %v, want ErrTopicExists", err)
	}
}
