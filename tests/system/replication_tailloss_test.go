package system_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestLeaderRestartedWithLostTail runs three `tributary broker` processes
// on a real ZooKeeper, a topic of one partition with three replicas and
// min.insync.replicas 2, and an idempotent acks=all producer. Three times
// it kill -9s the partition's leader, cuts up to 64 KiB from its newest
// segment (what a disk that lost its last writes leaves: unacknowledged
// records and acknowledged ones, which its followers hold) and restarts it
// at once, within its ZooKeeper session. The restarted broker must not lead
// on what it kept, and the followers must not truncate to it: afterwards
// every acknowledged record is in the partition exactly once and in order,
// every replica holds every offset below the high watermark, and the
// replicas hold the same record at each offset.
func TestLeaderRestartedWithLostTail(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	const topic, rounds = "tailloss", 3
	j := startJepsen(t, 3)
	testenv.Run(t, "", 0, "topics", "create", "--brokers", j.addrs()[0], "--partitions", "1",
		"--replication-factor", "3", "--config", "min.insync.replicas=2", topic)
	if !j.waitInSync(topic, 1, 30*time.Second) {
		t.Fatal("the new topic's partition is not led with three in-sync replicas")
	}
	prod := newJepsenProducer(t, j.addrs(), topic, 1)
	var cut int64
	for round := range rounds {
		prod.waitAcked(t, 0, prod.ackedCount(0)+3000, 60*time.Second)
		leader := j.leader(t, topic, 0)
		if leader <= 0 {
			t.Fatalf("round %d: no leader", round)
		}
		j.brokers[leader].p.Kill()
		n := cutSegmentTail(t, j.brokers[leader].dir, topic, 0, 64<<10)
		cut += n
		j.start(t, leader)
		t.Logf("round %d: killed broker %d, the leader, cut %d bytes from its newest segment, restarted it (%d records acknowledged so far)",
			round, leader, n, prod.ackedCount(0))
		if !j.healed(t, topic, 1, round, "tail-loss restart") {
			break
		}
	}
	prod.waitAcked(t, 0, prod.ackedCount(0)+500, 60*time.Second)
	prod.stop(t)
	end := j.endOffsets(t, topic)
	final := readPartitions(t, j.addrs(), topic, end)
	acked := prod.check(t, final)
	j.stopAll(t)
	compareReplicas(t, j.dataDirs(), topic, 1)
	checkReplicasHold(t, j.dataDirs(), topic, 0, end[0], final[0])
	t.Logf("figures: %d records acknowledged, %d rounds, %d bytes cut from leaders' tails, high watermark %d", acked, rounds, cut, end[0])
}

// cutSegmentTail cuts up to max bytes from the end of the newest segment
// of a stopped broker's partition, keeping at least a quarter of it (a
// tail, not the whole disk), and returns how many it cut.
func cutSegmentTail(t *testing.T, dataDir, topic string, p int, max int64) int64 {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p), "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments of %s-%d in %s: %v (%d found)", topic, p, dataDir, err, len(segs))
	}
	sort.Strings(segs)
	newest := segs[len(segs)-1]
	fi, err := os.Stat(newest)
	if err != nil {
		t.Fatal(err)
	}
	n := min(max, fi.Size()-fi.Size()/4)
	if err := os.Truncate(newest, fi.Size()-n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkReplicasHold checks that every broker's segment files hold every
// offset in [0, end) with the value the brokers served.
func checkReplicasHold(t *testing.T, dirs map[int32]string, topic string, p int32, end int64, want map[int64]string) {
	t.Helper()
	for id, dir := range dirs {
		recs, err := readSegments(filepath.Join(dir, fmt.Sprintf("%s-%d", topic, p)))
		if err != nil {
			t.Fatalf("broker %d: %v", id, err)
		}
		missing, differ := 0, 0
		for o := int64(0); o < end; o++ {
			got, ok := recs[o]
			switch {
			case !ok:
				if missing++; missing <= 3 {
					t.Errorf("broker %d, %s-%d: offset %d of [0, %d) missing", id, topic, p, o, end)
				}
			case string(got) != want[o]:
				if differ++; differ <= 3 {
					t.Errorf("broker %d, %s-%d: offset %d holds %q, the brokers served %q", id, topic, p, o, got, want[o])
				}
			}
		}
		if missing+differ > 0 {
			t.Errorf("broker %d, %s-%d: %d offsets missing, %d different, of [0, %d)", id, topic, p, missing, differ, end)
		}
	}
}

// ackedCount is how many records of partition p were acknowledged.
func (pr *jepsenProducer) ackedCount(p int32) int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return len(pr.acked[p])
}

// waitAcked waits until at least n records of partition p are
// acknowledged.
func (pr *jepsenProducer) waitAcked(t *testing.T, p int32, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for pr.ackedCount(p) < n {
		if time.Now().After(deadline) {
			t.Fatalf("partition %d: %d records acknowledged within %v, want %d", p, pr.ackedCount(p), within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
