package system_test

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestLoneLeaderRestartedWithLostTail is the case the Jepsen test found
// under load: the ISR shrinks to the leader alone because both followers
// lag (alive, in their sessions), then the leader is killed, loses the tail
// of its log and restarts within its session. The follower that left the
// ISR last holds every acknowledged record (nothing is acknowledged, and
// the high watermark does not move, while the ISR is under
// min.insync.replicas), so it must lead, not the restarted broker, whose
// lost tail would otherwise take acknowledged records with it.
func TestLoneLeaderRestartedWithLostTail(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	const topic = "elr"
	extra := []string{"--replica-lag-time-max", "1s", "--auto-leader-rebalance=false"}
	j, prod, leader, followers := startOnePartition(t, topic, 2000, extra...)
	zkc := dialTestZK(t, j.zk)
	f1, f2 := followers[0], followers[1]
	pause := func(id int32) { j.brokers[id].p.Cmd.Process.Signal(syscall.SIGSTOP) }
	resume := func(id int32) { j.brokers[id].p.Cmd.Process.Signal(syscall.SIGCONT) }
	t.Cleanup(func() { resume(f1); resume(f2) })

	// f1 lags: the ISR is the leader and f2, which acknowledge on their own.
	pause(f1)
	waitISR(t, zkc, j.zk, topic, []int32{leader, f2})
	prod.waitAcked(t, 0, prod.ackedCount(0)+2000, 60*time.Second)
	// f2 lags too: the leader is alone in the ISR and acknowledges nothing.
	pause(f2)
	waitISR(t, zkc, j.zk, topic, []int32{leader})
	acked := prod.ackedCount(0)

	j.brokers[leader].p.Kill()
	n := cutSegmentTail(t, j.brokers[leader].dir, topic, 0, 64<<10)
	startRepairBroker(t, j, leader, extra...)
	resume(f2) // within its session: it is the same incarnation that left the ISR
	resume(f1)
	t.Logf("killed broker %d, alone in the ISR, cut %d bytes from its newest segment, restarted it (%d records acknowledged)", leader, n, acked)

	if !j.healed(t, topic, 1, 0, "restart of the lone in-sync leader") {
		t.Log("checking what was acknowledged anyway")
	}
	prod.waitAcked(t, 0, prod.ackedCount(0)+500, 60*time.Second)
	prod.stop(t)
	end := j.endOffsets(t, topic)
	final := readPartitions(t, j.addrs(), topic, end)
	prod.check(t, final)
	j.stopAll(t)
	compareReplicas(t, j.dataDirs(), topic, 1)
	checkReplicasHold(t, j.dataDirs(), topic, 0, end[0], final[0])
}

// TestEveryInSyncReplicaRestartedWithLostTails is a power loss: all three
// brokers are killed at once, and each comes back with a different part of
// its log's tail lost (the leader 64 KiB, one follower 32 KiB, the other
// nothing), within its ZooKeeper session. No in-sync replica is alive in the
// incarnation the ISR records, so the controller takes the partition
// offline, the brokers report their log ends, and the longest log leads
// (cluster/logends.go): every acknowledged record survives, where electing
// the old leader lost its cut tail.
func TestEveryInSyncReplicaRestartedWithLostTails(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	const topic = "recovery"
	extra := []string{"--auto-leader-rebalance=false"}
	j, prod, leader, followers := startOnePartition(t, topic, 4000, extra...)
	zkc := dialTestZK(t, j.zk)
	before := waitLed(t, zkc, j.zk, topic, -1)
	cuts := map[int32]int64{leader: 64 << 10, followers[0]: 32 << 10, followers[1]: 0}
	for _, b := range j.brokers {
		b.p.Kill()
	}
	acked := prod.ackedCount(0)
	for id, n := range cuts {
		if n > 0 {
			cuts[id] = cutSegmentTail(t, j.brokers[id].dir, topic, 0, n)
		}
	}
	for id := range j.brokers {
		startRepairBroker(t, j, id, extra...)
	}
	t.Logf("killed all three brokers (%d records acknowledged), cut %v bytes from their newest segments, restarted them", acked, cuts)
	// Read from ZooKeeper: a broker that just restarted answers Metadata
	// from the state it read before the controller acted. The first
	// leader after the restarts may be one whose previous session has not
	// expired yet (its registration still names the killed process); the
	// controller moves off it once it registers again. Who leads once
	// the ISR is whole again (no rebalance moves it) is the recovery's
	// choice.
	waitLed(t, zkc, j.zk, topic, before.LeaderEpoch)
	if st := waitISR(t, zkc, j.zk, topic, []int32{leader, followers[0], followers[1]}); st.Leader != followers[1] {
		t.Errorf("broker %d leads after the recovery (leader epoch %d); want %d, whose log nothing was cut from", st.Leader, st.LeaderEpoch, followers[1])
	}
	prod.waitAcked(t, 0, prod.ackedCount(0)+500, 60*time.Second)
	prod.stop(t)
	end := j.endOffsets(t, topic)
	final := readPartitions(t, j.addrs(), topic, end)
	prod.check(t, final)
	j.stopAll(t)
	compareReplicas(t, j.dataDirs(), topic, 1)
	checkReplicasHold(t, j.dataDirs(), topic, 0, end[0], final[0])
}

// startOnePartition starts three brokers with extra flags, a topic of one
// partition with three replicas and min.insync.replicas 2, and a producer
// that has n records acknowledged; it returns the partition's leader and
// its followers in id order.
func startOnePartition(t *testing.T, topic string, n int, extra ...string) (*jepsenCluster, *jepsenProducer, int32, []int32) {
	t.Helper()
	j := startRepairCluster(t, extra...)
	testenv.Run(t, "", 0, "topics", "create", "--brokers", j.addrs()[0], "--partitions", "1",
		"--replication-factor", "3", "--config", "min.insync.replicas=2", topic)
	if !j.waitInSync(topic, 1, 30*time.Second) {
		t.Fatal("the new topic's partition is not led with three in-sync replicas")
	}
	prod := newJepsenProducer(t, j.addrs(), topic, 1)
	prod.waitAcked(t, 0, n, 60*time.Second)
	leader := j.leader(t, topic, 0)
	var followers []int32
	for id := range j.brokers {
		if id != leader {
			followers = append(followers, id)
		}
	}
	slices.Sort(followers)
	return j, prod, leader, followers
}

// waitLed waits until the state node of topic's partition 0 names a
// leader in a leader epoch above after, and returns it.
func waitLed(t *testing.T, conn *zk.Conn, connect, topic string, after int32) cluster.PartitionState {
	t.Helper()
	_, chroot, _ := strings.Cut(connect, "/")
	paths := cluster.ZKPaths{Root: "/" + chroot}
	var st cluster.PartitionState
	testenv.Eventually(t, 60*time.Second, topic+"-0 led again", func() bool {
		data, _, err := conn.Get(paths.PartitionState(topic, 0))
		if err != nil {
			return false
		}
		st, err = cluster.DecodePartitionStateNode(data)
		return err == nil && st.Leader >= 0 && st.LeaderEpoch > after
	})
	return st
}

// dialTestZK connects to connect's server (the chroot is read by the
// caller from connect).
func dialTestZK(t *testing.T, connect string) *zk.Conn {
	t.Helper()
	server, _, _ := strings.Cut(connect, "/")
	conn, _, err := zk.Connect([]string{server}, 10*time.Second, zk.WithLogger(quietZKLog{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

type quietZKLog struct{}

func (quietZKLog) Printf(string, ...any) {}

// waitISR waits until the state node of topic's partition 0 records isr,
// read from ZooKeeper (a paused broker's view would answer stale), and
// returns that state.
func waitISR(t *testing.T, conn *zk.Conn, connect, topic string, isr []int32) cluster.PartitionState {
	t.Helper()
	_, chroot, _ := strings.Cut(connect, "/")
	paths := cluster.ZKPaths{Root: "/" + chroot}
	var last cluster.PartitionState
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("the isr to become %v", isr), func() bool {
		data, _, err := conn.Get(paths.PartitionState(topic, 0))
		if err != nil {
			return false
		}
		st, err := cluster.DecodePartitionStateNode(data)
		if err != nil {
			return false
		}
		last = st
		got := slices.Clone(st.ISR)
		slices.Sort(got)
		want := slices.Clone(isr)
		slices.Sort(want)
		return slices.Equal(got, want)
	})
	t.Logf("isr %v (leader %d, leader epoch %d)", last.ISR, last.Leader, last.LeaderEpoch)
	return last
}
