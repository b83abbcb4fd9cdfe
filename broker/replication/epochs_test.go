package replication_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// epochCluster joins brokers 1 and 2 to a real ZooKeeper (no broker
// process behind them), creates a topic with one partition on both that
// broker 1 leads, and returns broker 1's replication state over a real log
// holding n flushed records that the old leader epoch's high watermark
// covered.
func epochCluster(t *testing.T, n int) (*replication.LeaderForTest, *cluster.ZooKeeper, cluster.Topic, *log.Log) {
	t.Helper()
	connect := testenv.StartZooKeeper(t)
	logger := testenv.Logger(t, 0)
	members := map[int32]*cluster.ZooKeeper{}
	for id := int32(1); id <= 2; id++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		z, err := cluster.JoinZooKeeper(ctx, connect, cluster.Broker{ID: id, Host: "127.0.0.1", Port: 1}, logger)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { z.Close() })
		members[id] = z
	}
	testenv.Eventually(t, 10*time.Second, "two brokers", func() bool { return len(members[1].Brokers()) == 2 })
	name := ""
	for i := 0; name == ""; i++ {
		rs, _ := cluster.SpreadReplicas("epochs"+strconv.Itoa(i), 1, 2, members[1].Brokers())
		if rs[0][0] == 1 {
			name = "epochs" + strconv.Itoa(i)
		}
	}
	if _, err := members[1].CreateReplicatedTopic(context.Background(), name, 1, 2, nil); err != nil {
		t.Fatal(err)
	}
	top, _ := members[1].Topic(name)
	l, _, err := log.Open(t.TempDir(), log.Config{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := range n {
		if _, err := l.Append(rbtest.Batch(rbtest.Record(0, nil, []byte(strconv.Itoa(i))), 1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	return replication.NewLeaderForTest(members[1], logger, map[string]int64{name: int64(n)}), members[1], top, l
}

// A broker leads only in the broker epoch the state names it in: a state
// recording another incarnation of it (it restarted, and the controller
// has not elected anew yet) gets NOT_LEADER_OR_FOLLOWER for appends, for
// consumers' and followers' fetches and for OffsetForLeaderEpoch (all of
// which ask replicas.leader), so no follower truncates to what a
// restarted leader kept.
func TestStaleLeadershipIsRefused(t *testing.T) {
	b, z, top, l := epochCluster(t, 3)
	st, _ := top.StateOf(0)
	if st.LeaderBrokerEpoch != z.BrokerEpoch() {
		t.Fatalf("state %+v does not name broker 1 in its epoch %d", st, z.BrokerEpoch())
	}
	if code := b.Append(top, 0, l); code != 0 {
		t.Fatalf("append in its own broker epoch: code %d", code)
	}

	stale := top
	stale.States = slices.Clone(top.States)
	stale.States[0].LeaderBrokerEpoch = z.BrokerEpoch() - 1 // an earlier incarnation
	notLeader := kerr.NotLeaderForPartition.Code
	if code := b.Append(stale, 0, l); code != notLeader {
		t.Errorf("append under another incarnation's leadership: code %d, want NOT_LEADER_OR_FOLLOWER", code)
	}
	if _, code := b.Fetch(stale, 0, l, -1, 0); code != notLeader {
		t.Errorf("consumer fetch: code %d, want NOT_LEADER_OR_FOLLOWER", code)
	}
	if _, code := b.Fetch(stale, 0, l, 2, 3); code != notLeader {
		t.Errorf("follower fetch: code %d, want NOT_LEADER_OR_FOLLOWER", code)
	}
	if err := b.Lead(stale, 0, l); err == nil {
		t.Error("OffsetForLeaderEpoch would be answered by another incarnation's leader")
	}
	// A state written before broker epochs names its leader by id.
	stale.States[0].LeaderBrokerEpoch = 0
	if code := b.Append(stale, 0, l); code != 0 {
		t.Errorf("append under a state without broker epochs: code %d", code)
	}
}

// An in-sync follower whose fetch offset (its fsynced end) is below the
// high watermark lost records it had acknowledged: the leader takes it out
// of the ISR at once rather than after replica.lag.time.max.ms, so it
// cannot be elected until it has them again.
func TestInSyncFollowerBelowHighWatermarkLeavesTheISR(t *testing.T) {
	b, z, top, l := epochCluster(t, 5)
	if hw, code := b.Fetch(top, 0, l, 2, 5); code != 0 || hw != 5 {
		t.Fatalf("follower caught up: high watermark %d, code %d; want 5", hw, code)
	}
	if _, code := b.Fetch(top, 0, l, 2, 2); code != 0 {
		t.Fatalf("follower fetch below the high watermark: code %d", code)
	}
	testenv.Eventually(t, 10*time.Second, "the follower that lost acknowledged records leaves the isr", func() bool {
		cur, _ := z.Topic(top.Name)
		st, _ := cur.StateOf(0)
		return slices.Equal(st.ISR, []int32{1})
	})
	cur, _ := z.Topic(top.Name)
	if st, _ := cur.StateOf(0); st.LeaderEpoch != 0 || !st.LedBy(1, z.BrokerEpoch()) {
		t.Fatalf("state after the follower left: %+v", st)
	}
}
