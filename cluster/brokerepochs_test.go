package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// replaceRegistration replaces broker id's registration node with a new
// one of the same content in one ZooKeeper transaction, as a broker that
// restarts within its session timeout does from the controller's point of
// view: no read of the registry ever finds the broker missing. It returns
// the new node's czxid, the broker's new epoch.
func replaceRegistration(t *testing.T, s *cluster.ZKSession, id int32) int64 {
	t.Helper()
	path := s.Paths.Broker(id)
	data, _, err := s.Conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn.Multi(&zk.DeleteRequest{Path: path, Version: -1},
		&zk.CreateRequest{Path: path, Data: data, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	_, stat, err := s.Conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	return stat.Czxid
}

// readState reads a partition's state node from ZooKeeper.
func readState(t *testing.T, s *cluster.ZKSession, topic string, p int32) cluster.PartitionState {
	t.Helper()
	data, _, err := s.Conn.Get(s.Paths.PartitionState(topic, p))
	if err != nil {
		t.Fatal(err)
	}
	st, err := cluster.DecodePartitionStateNode(data)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// reportEnd writes broker id's log-end report for topic's partition p, as
// its broker would.
func reportEnd(t *testing.T, s *cluster.ZKSession, topic string, p, id int32, r cluster.LogEndReport) {
	t.Helper()
	dir := s.Paths.PartitionLogEnds(topic, p)
	if err := s.EnsurePath(dir); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(r)
	if _, err := s.Conn.Create(dir+"/"+strconv.Itoa(int(id)), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

func brokerEpoch(t *testing.T, s *cluster.ZKSession, id int32) int64 {
	t.Helper()
	_, stat, err := s.Conn.Get(s.Paths.Broker(id))
	if err != nil {
		t.Fatal(err)
	}
	return stat.Czxid
}

// A broker that restarts within its session timeout is never seen gone by
// a watch; the controller still tells it apart by its broker epoch (the
// czxid of its registration): it leaves the ISR, and the partitions it
// led go to another in-sync replica in a new leader epoch. The states a
// new topic starts with record each member's epoch.
func TestControllerMovesLeadershipOffARestartedBroker(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	members := map[int32]*cluster.ZooKeeper{1: join(t, connect, 1), 2: join(t, connect, 2), 3: join(t, connect, 3)}
	for _, m := range members {
		testenv.Eventually(t, 5*time.Second, "three brokers", func() bool { return len(m.Brokers()) == 3 })
	}
	s := session(t, connect)
	for id, m := range members {
		if got, want := m.BrokerEpoch(), brokerEpoch(t, s, id); got != want || got == 0 {
			t.Fatalf("broker %d: BrokerEpoch %d, its registration's czxid %d", id, got, want)
		}
	}
	created, err := members[1].CreateReplicatedTopic(context.Background(), "restarts", 1, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := readState(t, s, "restarts", 0)
	for i, id := range st.ISR {
		if st.ISRBrokerEpochs[i] != members[id].BrokerEpoch() {
			t.Fatalf("new state %+v: broker %d recorded in epoch %d, runs in %d", st, id, st.ISRBrokerEpochs[i], members[id].BrokerEpoch())
		}
	}
	leader := created.Replicas[0][0]
	if st.LeaderBrokerEpoch != members[leader].BrokerEpoch() || !st.LedBy(leader, members[leader].BrokerEpoch()) {
		t.Fatalf("new state %+v does not name leader %d in its epoch %d", st, leader, members[leader].BrokerEpoch())
	}

	replaceRegistration(t, s, leader)
	next := created.Replicas[0][1]
	testenv.Eventually(t, 20*time.Second, "the leadership moves off the restarted broker", func() bool {
		st = readState(t, s, "restarts", 0)
		return st.Leader == next && st.LeaderEpoch == 1
	})
	if slices.Contains(st.ISR, leader) || st.LeaderBrokerEpoch != members[next].BrokerEpoch() || !st.LedBy(next, members[next].BrokerEpoch()) {
		t.Fatalf("state after the restart %+v: the restarted broker %d must be out of the isr, %d lead in its epoch %d",
			st, leader, next, members[next].BrokerEpoch())
	}
	// The old incarnation's view may still name it leader: it is not,
	// in its own epoch.
	if st.LedBy(leader, members[leader].BrokerEpoch()) {
		t.Fatalf("state %+v still led by the old incarnation of %d", st, leader)
	}

	// A restarted follower leaves the ISR without an election.
	follower := created.Replicas[0][2]
	replaceRegistration(t, s, follower)
	testenv.Eventually(t, 20*time.Second, "the restarted follower leaves the isr", func() bool {
		st = readState(t, s, "restarts", 0)
		return !slices.Contains(st.ISR, follower)
	})
	if st.Leader != next || st.LeaderEpoch != 1 {
		t.Fatalf("a follower's restart changed the leadership: %+v", st)
	}
}

// When the leader restarted and no other in-sync replica is alive, it
// leads again, alone, in a new leader epoch and its new broker epoch, so
// that what it led before its restart is fenced.
func TestControllerReelectsARestartedLoneLeaderInANewEpoch(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	members := map[int32]*cluster.ZooKeeper{1: join(t, connect, 1), 2: join(t, connect, 2)}
	for _, m := range members {
		testenv.Eventually(t, 5*time.Second, "two brokers", func() bool { return len(m.Brokers()) == 2 })
	}
	created, err := members[1].CreateReplicatedTopic(context.Background(), "lone", 1, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	leader, follower := created.Replicas[0][0], created.Replicas[0][1]
	members[follower].Close()
	s := session(t, connect)
	testenv.Eventually(t, 20*time.Second, "the dead follower leaves the isr", func() bool {
		return slices.Equal(readState(t, s, "lone", 0).ISR, []int32{leader})
	})
	epoch := replaceRegistration(t, s, leader)
	// Every in-sync replica restarted: offline until they report their log
	// ends (logends.go), then the longest leads in the next epoch.
	var st cluster.PartitionState
	testenv.Eventually(t, 20*time.Second, "the partition offline in a new epoch", func() bool {
		st = readState(t, s, "lone", 0)
		return st.Leader == -1 && st.LeaderEpoch == 1
	})
	reportEnd(t, s, "lone", 0, leader, cluster.LogEndReport{BrokerEpoch: epoch, LeaderEpoch: 1, LogEnd: 0})
	testenv.Eventually(t, 20*time.Second, "the restarted leader leads again in a new epoch", func() bool {
		st = readState(t, s, "lone", 0)
		return st.LeaderEpoch == 2
	})
	if st.Leader != leader || st.LeaderBrokerEpoch != epoch || !slices.Equal(st.ISR, []int32{leader}) || !slices.Equal(st.ISRBrokerEpochs, []int64{epoch}) {
		t.Fatalf("state %+v: want %d alone in the isr, in broker epoch %d", st, leader, epoch)
	}

	// The old incarnation (this member still runs in its old epoch) can
	// no longer write the ISR.
	if _, err := members[leader].SetISR(context.Background(), "lone", 0, 2, []int32{leader}, 1, false); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("ISR write of the leader's old incarnation: %v, want ErrNotLeader", err)
	}

	// A broker joining again gets a larger epoch.
	rejoined := join(t, connect, follower)
	if got := rejoined.BrokerEpoch(); got <= epoch || got != brokerEpoch(t, s, follower) {
		t.Fatalf("broker %d rejoined in epoch %d; the restarted leader's is %d, its node's %d", follower, got, epoch, brokerEpoch(t, s, follower))
	}
}
