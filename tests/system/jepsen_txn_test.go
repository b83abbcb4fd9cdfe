package system_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestJepsenTransactions runs three `tributary broker` processes on a real
// ZooKeeper (the transaction state replicated three ways), two
// transactional producers that commit or abort each transaction at
// random, and a read_committed consumer, while it kill -9s, round after
// round, the leader of a partition and then the broker coordinating the
// producers' transactions, restarting each, and SIGSTOPs the coordinator
// past its ZooKeeper session (then SIGCONTs it). Afterwards:
//   - every record of a transaction whose commit was acknowledged is in
//     the topic exactly once; one whose commit failed is there at most
//     once; no record of an aborted transaction is there;
//   - the consumer never read an aborted record, never read a record
//     twice, and never saw a partition's offset go backwards.
//
// It runs for SOAK_DURATION (default 30s of faults); `make soak` runs it
// longer.
func TestJepsenTransactions(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	faults := 30 * time.Second
	if s := os.Getenv("SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SOAK_DURATION=%q: %v", s, err)
		}
		faults = d
	}
	const topic, partitions = "jtxn", 3
	j := startJepsen(t, 3, "--default-replication-factor", "3")
	testenv.Run(t, "", 0, "topics", "create", "--brokers", j.addrs()[0], "--partitions", strconv.Itoa(partitions),
		"--replication-factor", "3", "--config", "min.insync.replicas=2", topic)
	if !j.waitInSync(topic, partitions, 30*time.Second) {
		t.Fatal("the new topic's partitions are not led with three in-sync replicas")
	}
	ledger := &txnLedger{state: map[string]txnOutcome{}}
	cons := startTxnReader(t, j.addrs(), topic, ledger)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runTxnProducer(ctx, j.addrs(), topic, fmt.Sprintf("jt-%d", i), ledger)
		}()
	}
	testenv.Eventually(t, 60*time.Second, "a first committed transaction", func() bool { return ledger.count(committed) > 0 })

	stateTopic := "__transaction_state"
	coordinatorPartition := txn.PartitionFor("jt-0", 50)
	deadline := time.Now().Add(faults)
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		p := int32(round % partitions)
		if leader := j.leader(t, topic, p); leader > 0 {
			j.brokers[leader].p.Kill()
			t.Logf("round %d: killed broker %d, leader of %s-%d", round, leader, topic, p)
			j.waitLeader(t, topic, p, leader, 60*time.Second)
			j.start(t, leader)
		}
		if !j.healed(t, topic, partitions, round, "partition leader restart") {
			break
		}
		if c := j.leader(t, stateTopic, coordinatorPartition); c > 0 {
			j.brokers[c].p.Kill()
			t.Logf("round %d: killed broker %d, coordinator of jt-0", round, c)
			j.waitLeader(t, stateTopic, coordinatorPartition, c, 60*time.Second)
			j.start(t, c)
		}
		if !j.healed(t, topic, partitions, round, "coordinator restart") {
			break
		}
		// SIGSTOP the coordinator past its ZooKeeper session, then SIGCONT:
		// a paused coordinator must not decide anything after another took
		// its state partition over.
		if c := j.leader(t, stateTopic, coordinatorPartition); c > 0 {
			j.brokers[c].p.Cmd.Process.Signal(syscall.SIGSTOP)
			t.Logf("round %d: paused broker %d, coordinator of jt-0", round, c)
			time.Sleep(jepsenSession + 2*time.Second)
			j.brokers[c].p.Cmd.Process.Signal(syscall.SIGCONT)
		}
		if !j.healed(t, topic, partitions, round, "coordinator pause") {
			break
		}
		before := ledger.count(committed)
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("round %d: a transaction committed after the faults", round),
			func() bool { return ledger.count(committed) > before })
	}
	stop()
	wg.Wait()

	// Read everything committed, once no transaction is open.
	want := ledger.count(committed)
	final := readCommittedValues(t, j.addrs(), topic, partitions)
	ledger.check(t, final)
	testenv.Eventually(t, 60*time.Second, "the live consumer reaching the sentinels", func() bool { return cons.sentinels() >= partitions })
	cons.stop()
	cons.check(t, ledger)
	dumpAround(t, j.addrs(), topic, cons.aborted)
	t.Logf("%d transactions committed, %d aborted, %d uncertain; %d records read", want, ledger.count(aborted), ledger.count(uncertain), len(final))
	j.stopAll(t)
}

type txnOutcome int

const (
	committed txnOutcome = iota + 1
	aborted
	uncertain // the commit's answer was an error: committed or not
)

// txnLedger is what the producers know of each transaction, by its first
// record's prefix (producer-instance-sequence).
type txnLedger struct {
	mu    sync.Mutex
	state map[string]txnOutcome
	sizes map[string]int
}

func (l *txnLedger) set(txn string, o txnOutcome, size int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state[txn] = o
	if l.sizes == nil {
		l.sizes = map[string]int{}
	}
	l.sizes[txn] = size
}

func (l *txnLedger) outcome(txn string) txnOutcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state[txn]
}

func (l *txnLedger) count(o txnOutcome) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.state {
		if s == o {
			n++
		}
	}
	return n
}

// check compares the final contents (value → times present) with the
// outcomes.
func (l *txnLedger) check(t *testing.T, final map[string]int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for tx, o := range l.state {
		for i := range l.sizes[tx] {
			v := fmt.Sprintf("%s/%d", tx, i)
			n := final[v]
			switch {
			case o == committed && n != 1:
				t.Errorf("%s of a committed transaction is there %d times, want once", v, n)
			case o == aborted && n != 0:
				t.Errorf("%s of an aborted transaction is there %d times", v, n)
			case o == uncertain && n > 1:
				t.Errorf("%s of a transaction whose commit failed is there %d times", v, n)
			}
		}
	}
}

// runTxnProducer commits or aborts transactions of 10 records until ctx
// ends; a client that fails for good is replaced by a new instance with
// the same transactional id (which fences the old one).
func runTxnProducer(ctx context.Context, seeds []string, topic, id string, ledger *txnLedger) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(len(id))))
	for instance := 0; ctx.Err() == nil; instance++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(10*time.Second),
			kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			continue
		}
		for seq := 0; ctx.Err() == nil; seq++ {
			tx := fmt.Sprintf("%s-%d-%d", id, instance, seq)
			if cl.BeginTransaction() != nil {
				break
			}
			var failed error
			var mu sync.Mutex
			for i := range 10 {
				cl.Produce(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, "%s/%d", tx, i)}, func(_ *kgo.Record, err error) {
					if err != nil {
						mu.Lock()
						failed = errors.Join(failed, err)
						mu.Unlock()
					}
				})
			}
			fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			ferr := cl.Flush(fctx)
			cancel()
			commit := rng.IntN(3) != 0 && ferr == nil && failed == nil
			ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := cl.EndTransaction(ectx, kgo.TransactionEndTry(commit))
			cancel()
			switch {
			case !commit:
				ledger.set(tx, aborted, 10)
			case err == nil:
				ledger.set(tx, committed, 10)
			default:
				ledger.set(tx, uncertain, 10)
			}
			if err != nil || ferr != nil {
				break
			}
		}
		cl.Close()
	}
}

// txnReader is a read_committed consumer checking, as it reads, that no
// aborted record and no record twice is returned and offsets only grow.
type txnReader struct {
	t          *testing.T
	cancel     context.CancelFunc
	done       chan struct{}
	mu         sync.Mutex
	seen       map[string]int
	at         map[string]kgo.EpochOffset // where each value was read: partition (as Epoch) and offset
	last       map[int32]int64
	violations []string
	aborted    []kgo.EpochOffset // where aborted records were read (check)
}

func startTxnReader(t *testing.T, seeds []string, topic string, ledger *txnLedger) *txnReader {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &txnReader{t: t, cancel: cancel, done: make(chan struct{}), seen: map[string]int{}, at: map[string]kgo.EpochOffset{}, last: map[int32]int64{}}
	go func() {
		defer close(r.done)
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(rec *kgo.Record) {
				r.mu.Lock()
				defer r.mu.Unlock()
				v := string(rec.Value)
				if prev, ok := r.last[rec.Partition]; ok && rec.Offset <= prev {
					r.violations = append(r.violations, fmt.Sprintf("partition %d went from offset %d back to %d", rec.Partition, prev, rec.Offset))
				}
				r.last[rec.Partition] = rec.Offset
				r.seen[v]++
				r.at[v] = kgo.EpochOffset{Epoch: rec.Partition, Offset: rec.Offset}
				if r.seen[v] > 1 && v != sentinel {
					r.violations = append(r.violations, fmt.Sprintf("%s read twice", v))
				}
			})
		}
	}()
	return r
}

func (r *txnReader) sentinels() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[sentinel]
}

func (r *txnReader) stop() {
	r.cancel()
	<-r.done
}

// check fails on what the reader saw wrong, aborted records included
// (judged now that every transaction's outcome is known).
func (r *txnReader) check(t *testing.T, ledger *txnLedger) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.violations {
		t.Error(v)
	}
	for v := range r.seen {
		if v == sentinel {
			continue
		}
		tx := v[:len(v)-len("/0")]
		if ledger.outcome(tx) == aborted {
			at := r.at[v]
			t.Errorf("the read_committed consumer read %s of an aborted transaction, at offset %d of partition %d", v, at.Offset, at.Epoch)
			r.aborted = append(r.aborted, at)
		}
	}
}

// readCommittedValues writes a sentinel record (no transaction) to each
// partition and reads the whole topic at read_committed until it met all
// of them: everything before them was then returned, and an open
// transaction would hold them back. It returns how often each value is
// there.
func readCommittedValues(t *testing.T, seeds []string, topic string, partitions int) map[string]int {
	t.Helper()
	pl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	for p := range int32(partitions) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := pl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(sentinel)}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("writing the sentinel to %s-%d: %v", topic, p, err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string]int{}
	testenv.Eventually(t, 90*time.Second, "reading every partition to its sentinel (a transaction left open holds it back)", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out[string(r.Value)]++ })
		return out[sentinel] >= partitions
	})
	return out
}

const sentinel = "sentinel"

// dumpAround logs, for the first place of each partition in at, the
// records around it as they are stored (read_uncommitted, markers kept):
// what a failure's investigation needs first.
func dumpAround(t *testing.T, seeds []string, topic string, at []kgo.EpochOffset) {
	done := map[int32]bool{}
	for _, a := range at {
		if done[a.Epoch] {
			continue
		}
		done[a.Epoch] = true
		from := max(a.Offset-15, 0)
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.KeepControlRecords(),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {a.Epoch: kgo.NewOffset().At(from)}}))
		if err != nil {
			t.Log(err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var lines []string
		for ctx.Err() == nil && (len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "end")) {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				if r.Offset > a.Offset+15 {
					return
				}
				what := string(r.Value)
				if r.Attrs.IsControl() {
					what = "COMMIT marker"
					if len(r.Key) >= 4 && r.Key[3] == 0 {
						what = "ABORT marker"
					}
				}
				lines = append(lines, fmt.Sprintf("%d: producer %d epoch %d transactional %v: %s", r.Offset, r.ProducerID, r.ProducerEpoch, r.Attrs.IsTransactional(), what))
				if r.Offset >= a.Offset+15 {
					lines = append(lines, "end")
				}
			})
		}
		cancel()
		cl.Close()
		t.Logf("partition %d around offset %d, as stored:\n%s", a.Epoch, a.Offset, strings.Join(lines, "\n"))
	}
}
