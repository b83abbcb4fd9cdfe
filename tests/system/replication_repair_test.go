package system_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Repair from replicas, with three `tributary broker` processes and a real
// ZooKeeper: a replica that finds a damaged batch in its own log fetches it
// back from another replica instead of keeping the gap (broker/replication's
// repair.go).

// startRepairCluster is startJepsen's cluster with extra broker flags.
func startRepairCluster(t *testing.T, extra ...string) *jepsenCluster {
	j := &jepsenCluster{zk: testenv.StartZooKeeper(t), brokers: map[int32]*jepsenBroker{}}
	for id := int32(1); id <= 3; id++ {
		j.brokers[id] = &jepsenBroker{id: id, addr: testenv.FreeAddr(t), dir: t.TempDir()}
		startRepairBroker(t, j, id, extra...)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(j.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	j.adm = kadm.NewClient(cl)
	for _, addr := range j.addrs() {
		waitBrokers(t, addr, 3)
	}
	return j
}

func startRepairBroker(t *testing.T, j *jepsenCluster, id int32, extra ...string) {
	b := j.brokers[id]
	args := append([]string{"broker", "--id", strconv.Itoa(int(id)), "--zookeeper", j.zk,
		"--zookeeper-session-timeout", jepsenSession.String(), "--listen", b.addr, "--data-dir", b.dir, "--min-insync-replicas", "2",
		"--replica-lag-time-max", "5s"}, extra...)
	b.p = testenv.StartProcess(t, args...)
	testenv.WaitListening(t, b.p, b.addr, 60*time.Second)
}

// ackedProducer writes "record-<i>" records, acks=all, idempotent,
// uncompressed (readSegments reads them), and remembers what was
// acknowledged.
type ackedProducer struct {
	cl    *kgo.Client
	mu    sync.Mutex
	acked map[string]bool
	next  int
}

func newAckedProducer(t *testing.T, seeds []string, topic string) *ackedProducer {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &ackedProducer{cl: cl, acked: map[string]bool{}}
}

// produce sends n records, batch at a time, and waits for each batch.
func (pr *ackedProducer) produce(t *testing.T, n, batch int) {
	t.Helper()
	for sent := 0; sent < n; sent += batch {
		var rs []*kgo.Record
		for range min(batch, n-sent) {
			rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("record-%d", pr.next))})
			pr.next++
		}
		for _, r := range pr.cl.ProduceSync(context.Background(), rs...) {
			if r.Err == nil {
				pr.mu.Lock()
				pr.acked[string(r.Record.Value)] = true
				pr.mu.Unlock()
			}
		}
	}
}

// checkRepaired checks, with the cluster healed, that consumers read every
// acknowledged record exactly once, then stops the brokers and checks that
// the repaired brokers' files hold every offset below the end (no gap
// left) and that the replicas agree.
func checkRepaired(t *testing.T, j *jepsenCluster, topic string, pr *ackedProducer, repaired ...int32) {
	t.Helper()
	if !j.waitInSync(topic, 1, 60*time.Second) {
		ps, _ := j.partitions(topic)
		t.Fatalf("brokers %v did not rejoin the isr after their repair: %+v", repaired, ps)
	}
	ends := j.endOffsets(t, topic)
	got := readPartitions(t, j.addrs(), topic, ends)[0]
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	missing := 0
	for v := range pr.acked {
		if seen[v] != 1 {
			if missing++; missing <= 5 {
				t.Errorf("acknowledged %s read %d times", v, seen[v])
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged records not read exactly once", missing, len(pr.acked))
	}
	t.Logf("%d records acknowledged, every one read exactly once; the log ends at %d", len(pr.acked), ends[0])
	j.stopAll(t)
	for _, id := range repaired {
		dir := filepath.Join(j.brokers[id].dir, topic+"-0")
		recs, err := readSegments(dir)
		if err != nil {
			t.Fatal(err)
		}
		for o := int64(0); o < ends[0]; o++ {
			if _, ok := recs[o]; !ok {
				t.Fatalf("broker %d: offset %d of [0, %d) missing after the repair", id, o, ends[0])
			}
		}
		if q, _ := filepath.Glob(filepath.Join(dir, "*.quarantine-*")); len(q) == 0 {
			t.Fatalf("broker %d quarantined nothing: the damage was never found", id)
		}
		if rep, err := log.Verify(dir); err != nil || rep.Damaged() {
			t.Fatalf("broker %d's log after the repair: %+v, %v", id, rep, err)
		}
	}
	compareReplicas(t, j.dataDirs(), topic, 1)
}

// flipInBatch flips the last byte (inside its CRC's range) of the batch
// holding offset in the segment file seg.
func flipInBatch(t *testing.T, seg string, offset int64) {
	t.Helper()
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for pos := 0; pos+61 <= len(data); {
		size := 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
		base := int64(binary.BigEndian.Uint64(data[pos:]))
		last := base + int64(binary.BigEndian.Uint32(data[pos+23:]))
		if base <= offset && offset <= last {
			f, err := os.OpenFile(seg, os.O_RDWR, 0) // in place, as a disk would
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte{data[pos+size-1] ^ 0xff}, int64(pos+size-1)); err != nil {
				t.Fatal(err)
			}
			return
		}
		pos += size
	}
	t.Fatalf("%s holds no batch with offset %d", seg, offset)
}

func segmentsOf(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segments in %s: %v", dir, err)
	}
	sort.Strings(segs)
	return segs
}

// A byte flipped in a sealed segment of a running leader: the scrubber
// finds the damaged batch, the leader steps down, fetches the batch back
// from the new leader, and consumers read every acknowledged record, also
// those produced while it happened.
func TestRunningLeaderRepairsDamageFromAReplica(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	const topic = "repair-running"
	j := startRepairCluster(t, "--scrub-interval", "300ms")
	testenv.Run(t, "", 0, "topics", "create", "--brokers", j.addrs()[0], "--partitions", "1", "--replication-factor", "3",
		"--config", "min.insync.replicas=2", "--config", "segment.bytes=1024", topic)
	if !j.waitInSync(topic, 1, 30*time.Second) {
		t.Fatal("the new topic is not led with three in-sync replicas")
	}
	pr := newAckedProducer(t, j.addrs(), topic)
	pr.produce(t, 300, 5)
	leader := j.leader(t, topic, 0)
	segs := segmentsOf(t, filepath.Join(j.brokers[leader].dir, topic+"-0"))
	if len(segs) < 3 {
		t.Fatalf("want several sealed segments, found %d", len(segs))
	}
	flipInBatch(t, segs[1], mustBase(t, segs[1])+2) // the first batch of the second segment

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); pr.produce(t, 200, 5) }() // traffic goes on meanwhile
	j.waitLeader(t, topic, 0, leader, 30*time.Second)
	wg.Wait()
	checkRepaired(t, j, topic, pr, leader)
}

// mustBase is the base offset a segment file is named by.
func mustBase(t *testing.T, seg string) int64 {
	t.Helper()
	base, err := strconv.ParseInt(filepath.Base(seg)[:20], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// The leader is killed (-9), one byte of an acknowledged batch in the
// middle of its newest segment is flipped, and it is restarted at once,
// within its ZooKeeper session: recovery quarantines the batch, and the
// broker, instead of serving the gap, hands the leadership over and
// fetches the batch back from a replica that holds it. Three times, each
// round on the partition's leader then, with traffic in between.
func TestLeaderRestartedWithDamagedBatch(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	const topic = "repair-restarted"
	j := startRepairCluster(t)
	testenv.Run(t, "", 0, "topics", "create", "--brokers", j.addrs()[0], "--partitions", "1", "--replication-factor", "3",
		"--config", "min.insync.replicas=2", topic)
	if !j.waitInSync(topic, 1, 30*time.Second) {
		t.Fatal("the new topic is not led with three in-sync replicas")
	}
	pr := newAckedProducer(t, j.addrs(), topic)
	pr.produce(t, 400, 5)
	var damaged []int32
	for round := range 3 {
		leader := j.leader(t, topic, 0)
		b := j.brokers[leader]
		b.p.Kill()
		segs := segmentsOf(t, filepath.Join(b.dir, topic+"-0"))
		flipInBatch(t, segs[len(segs)-1], int64(pr.next-150)) // acknowledged, with batches after it
		startRepairBroker(t, j, leader)
		if !slices.Contains(damaged, leader) {
			damaged = append(damaged, leader)
		}
		pr.produce(t, 200, 5)
		if !j.waitInSync(topic, 1, 60*time.Second) {
			ps, _ := j.partitions(topic)
			t.Fatalf("round %d: broker %d did not rejoin the isr after its repair: %+v", round, leader, ps)
		}
	}
	checkRepaired(t, j, topic, pr, damaged...)
}
