package system_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestJepsenReplicatedCluster runs three `tributary broker` processes on a
// real ZooKeeper, a topic of three partitions with three replicas and
// min.insync.replicas 2, idempotent acks=all producers and a consumer
// group, while it kill -9s the current leader of a partition (and
// restarts it), SIGSTOPs a broker past its ZooKeeper session timeout
// (and SIGCONTs it), and kill -9s the leader of another partition, cuts
// the tails of its segments (a disk that lost its last writes) and
// restarts it at once, within its session, round after round. Afterwards:
//   - every acknowledged record is in its partition exactly once, in the
//     order it was produced;
//   - the consumer never saw an offset go backwards within an assignment,
//     and every record it saw is still at that offset;
//   - once quiet, the replicas' segment files hold the same record at every
//     offset they share.
//
// It runs for SOAK_DURATION (default 30s of faults, under two minutes in
// all); `make soak` runs it longer and prints its figures.
func TestJepsenReplicatedCluster(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	faults := 30 * time.Second
	if s := os.Getenv("SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SOAK_DURATION=%q: %v", s, err)
		}
		faults = d
	}
	const topic, partitions = "jepsen", 3
	j := startJepsen(t, 3)
	testenv.Run(t, "", 0, "topics", "create", "--brokers", j.addrs()[0], "--partitions", strconv.Itoa(partitions),
		"--replication-factor", "3", "--config", "min.insync.replicas=2", topic)
	if !j.waitInSync(topic, partitions, 30*time.Second) {
		t.Fatal("the new topic's partitions are not led with three in-sync replicas")
	}

	prod := newJepsenProducer(t, j.addrs(), topic, partitions)
	cons := newJepsenConsumer(t, j.addrs(), topic)

	// Faults, round after round, until the duration is spent.
	var failovers, tailCuts int
	var maxFailover time.Duration
	var cut int64
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	deadline := time.Now().Add(faults)
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		p := int32(round % partitions)
		// kill -9 the leader of partition p, wait for another to lead,
		// restart it.
		if leader := j.leader(t, topic, p); leader > 0 {
			prod.markFault(p)
			killed := time.Now()
			j.brokers[leader].p.Kill()
			t.Logf("round %d: killed broker %d, leader of %s-%d", round, leader, topic, p)
			j.waitLeader(t, topic, p, leader, 60*time.Second)
			if d, ok := prod.waitAckAfter(p, killed, 60*time.Second); ok {
				failovers++
				maxFailover = max(maxFailover, d)
			}
			j.start(t, leader)
		}
		if !j.healed(t, topic, partitions, round, "restart") {
			break
		}
		// SIGSTOP a broker past its session timeout, then SIGCONT it.
		victim := int32(rng.IntN(3) + 1)
		j.brokers[victim].p.Cmd.Process.Signal(syscall.SIGSTOP)
		t.Logf("round %d: paused broker %d", round, victim)
		time.Sleep(jepsenSession + 2*time.Second)
		j.brokers[victim].p.Cmd.Process.Signal(syscall.SIGCONT)
		if !j.healed(t, topic, partitions, round, "pause") {
			break
		}
		// kill -9 the leader of another partition, cut the tails of its
		// segments, restart it before its session expires.
		q := (p + 1) % partitions
		if leader := j.leader(t, topic, q); leader > 0 {
			j.brokers[leader].p.Kill()
			var n int64
			for part := range partitions {
				n += cutSegmentTail(t, j.brokers[leader].dir, topic, part, 64<<10)
			}
			j.start(t, leader)
			tailCuts++
			cut += n
			t.Logf("round %d: killed broker %d, leader of %s-%d, cut %d bytes from its segments' tails, restarted it", round, leader, topic, q, n)
		}
		if !j.healed(t, topic, partitions, round, "tail-loss restart") {
			break
		}
	}

	prod.stop(t)
	end := j.endOffsets(t, topic)
	cons.stopAt(t, end, 60*time.Second)
	final := readPartitions(t, j.addrs(), topic, end)
	acked := prod.check(t, final)
	cons.check(t, final, end)
	j.stopAll(t)
	compareReplicas(t, j.dataDirs(), topic, partitions)
	t.Logf("figures: %d records acknowledged, %d failovers, max failover %v (kill -9 to the next acknowledgement on that partition, ZooKeeper session timeout %v included), %d tail-loss restarts (%d bytes cut), %d consumer records",
		acked, failovers, maxFailover.Round(time.Millisecond), jepsenSession, tailCuts, cut, cons.count())
	if os.Getenv("SOAK_DURATION") != "" {
		fmt.Printf("soak: %v of faults: %d records acknowledged, %d failovers, max failover %v, %d tail-loss restarts (%d bytes cut)\n",
			faults, acked, failovers, maxFailover.Round(time.Millisecond), tailCuts, cut)
	}
}

// jepsenBroker is one broker process and what restarts it.
type jepsenBroker struct {
	id   int32
	addr string
	dir  string
	p    *testenv.Process
}

type jepsenCluster struct {
	zk      string
	brokers map[int32]*jepsenBroker
	adm     *kadm.Client
	extra   []string // flags every broker starts with
}

func startJepsen(t *testing.T, n int, extra ...string) *jepsenCluster {
	j := &jepsenCluster{zk: testenv.StartZooKeeper(t), brokers: map[int32]*jepsenBroker{}, extra: extra}
	for id := int32(1); id <= int32(n); id++ {
		j.brokers[id] = &jepsenBroker{id: id, addr: testenv.FreeAddr(t), dir: t.TempDir()}
		j.start(t, id)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(j.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	j.adm = kadm.NewClient(cl)
	for _, addr := range j.addrs() {
		waitBrokers(t, addr, n)
	}
	return j
}

// jepsenSession is the ZooKeeper session timeout of the brokers these tests
// start: their faults pause brokers and restart them "within the session"
// or "past it", and were written for 6 s (the default before it became 4).
const jepsenSession = 6 * time.Second

func (j *jepsenCluster) start(t *testing.T, id int32) {
	b := j.brokers[id]
	b.p = testenv.StartProcess(t, append([]string{"broker", "--id", strconv.Itoa(int(id)), "--zookeeper", j.zk,
		"--zookeeper-session-timeout", jepsenSession.String(),
		"--listen", b.addr, "--data-dir", b.dir, "--min-insync-replicas", "2",
		"--replica-lag-time-max", "5s", "--leader-rebalance-interval", "10s"}, j.extra...)...)
	testenv.WaitListening(t, b.p, b.addr, 60*time.Second)
}

func (j *jepsenCluster) addrs() []string {
	var out []string
	for id := int32(1); id <= int32(len(j.brokers)); id++ {
		out = append(out, j.brokers[id].addr)
	}
	return out
}

func (j *jepsenCluster) dataDirs() map[int32]string {
	out := map[int32]string{}
	for id, b := range j.brokers {
		out[id] = b.dir
	}
	return out
}

// partitions reads the topic's partitions, asking with a short deadline
// so that a paused broker does not hold the test.
func (j *jepsenCluster) partitions(topic string) (kadm.PartitionDetails, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	md, err := j.adm.Metadata(ctx, topic)
	if err != nil {
		return nil, false
	}
	td, ok := md.Topics[topic]
	return td.Partitions, ok && td.Err == nil
}

func (j *jepsenCluster) leader(t *testing.T, topic string, p int32) int32 {
	ps, ok := j.partitions(topic)
	if !ok {
		return -1
	}
	return ps[p].Leader
}

func (j *jepsenCluster) waitLeader(t *testing.T, topic string, p, not int32, within time.Duration) {
	testenv.Eventually(t, within, fmt.Sprintf("%s-%d led by a broker other than %d", topic, p, not), func() bool {
		l := j.leader(t, topic, p)
		return l > 0 && l != not
	})
}

// waitInSync waits until every partition is led with its three replicas
// in sync: the cluster has healed from the last fault.
func (j *jepsenCluster) waitInSync(topic string, partitions int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		ps, ok := j.partitions(topic)
		healed := ok && len(ps) == partitions
		for _, p := range ps {
			if p.Err != nil || p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
				healed = false
			}
		}
		if healed {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// healed waits for the cluster to heal after a fault. If it does not, the
// test fails but goes on to check what was acknowledged so far.
func (j *jepsenCluster) healed(t *testing.T, topic string, partitions, round int, fault string) bool {
	if j.waitInSync(topic, partitions, 60*time.Second) {
		return true
	}
	ps, _ := j.partitions(topic)
	var state []string
	for _, p := range ps.Sorted() {
		state = append(state, fmt.Sprintf("%d: leader %d isr %v", p.Partition, p.Leader, p.ISR))
	}
	// A replica that returns holding records its new leader never got
	// (written by the old leader, not yet fetched by the new one) cannot
	// follow until it truncates them (leader-epoch truncation); the
	// brokers log "follower's log is ahead of its leader's" then.
	t.Errorf("round %d: the cluster did not heal within 60s of the %s (%s); checking what was acknowledged so far",
		round, fault, strings.Join(state, ", "))
	return false
}

// endOffsets reads the high watermarks, retrying while a leadership
// moves (the controller rebalances leaders every 10s here).
func (j *jepsenCluster) endOffsets(t *testing.T, topic string) map[int32]int64 {
	var out map[int32]int64
	testenv.Eventually(t, 30*time.Second, "end offsets of every partition", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		ends, err := j.adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false
		}
		out = map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				out = nil
			} else if out != nil {
				out[o.Partition] = o.Offset
			}
		})
		return out != nil
	})
	return out
}

// stopAll stops every broker cleanly, so that their files are final.
func (j *jepsenCluster) stopAll(t *testing.T) {
	var wg sync.WaitGroup
	for _, b := range j.brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.p.Stop(30 * time.Second); err != nil {
				t.Errorf("stopping broker %d: %v", b.id, err)
			}
		}()
	}
	wg.Wait()
}
