package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// produceTxn runs one transaction of values on cl and commits or aborts it.
func produceTxn(t *testing.T, cl *kgo.Client, commit bool, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// A compacted topic written in transactions, end to end: the broker's
// cleaner removes aborted transactions' records (a read_uncommitted
// consumer no longer finds them), never lets one supersede a committed
// value, and keeps the markers, so a read_committed consumer reads every
// key's last committed value and nothing aborted, before and after
// cleaning.
func TestCompactedTopicWithAbortedTransactions(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.Log.Cleaner.Backoff = 20 * time.Millisecond
	}))
	const topic = "txn-state"
	createTopic(t, b.Addr, topic, 1, map[string]*string{
		"cleanup.policy":            kmsg.StringPtr("compact"),
		"segment.bytes":             kmsg.StringPtr("1024"),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"),
	})
	cl := txnClient(t, b.Addr, "compacting", topic)
	last := map[string]string{}
	aborted := 0
	for r := range 12 {
		var recs []*kgo.Record
		for k := range 4 {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "commit-%d-%d ..........................", r, k)})
			last[fmt.Sprintf("k%d", k)] = string(recs[k].Value)
		}
		produceTxn(t, cl, true, recs...)
		// An aborted transaction over the same keys, after the commit:
		// compaction must not let it supersede the committed values.
		recs = nil
		for k := range 4 {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "abort-%d-%d ...........................", r, k)})
		}
		produceTxn(t, cl, false, recs...)
		aborted += len(recs)
	}
	checkpoint := filepath.Join(dir, topic+"-0", "cleaner-checkpoint")
	testenv.Eventually(t, 60*time.Second, "the broker's cleaner cleans the compacted topic", func() bool {
		_, err := os.Stat(checkpoint)
		return err == nil
	})

	committed := consumeIsolated(t, b.Addr, topic, kgo.ReadCommitted(), 4)
	final := map[string]bool{}
	for _, v := range committed {
		if strings.HasPrefix(v, "abort-") {
			t.Fatalf("read_committed read %q of an aborted transaction", v)
		}
		final[v] = true
	}
	for k, v := range last {
		if !final[v] {
			t.Errorf("read_committed did not read %s's last committed value %q; read %q", k, v, committed)
		}
	}
	all := consumeIsolated(t, b.Addr, topic, kgo.ReadUncommitted(), 4)
	left := 0
	for _, v := range all {
		if strings.HasPrefix(v, "abort-") {
			left++
		}
	}
	if left >= aborted {
		t.Errorf("read_uncommitted still reads all %d aborted records after cleaning: the cleaner kept them", left)
	}
}

// Moving the log start into an aborted transaction that spans segments
// (DeleteRecords, as retention does a segment at a time): the transaction's
// records above the new start stay hidden from read_committed consumers,
// because its abort marker, and its entry in the aborted index, lie
// above; the last stable offset is not held by it; and after a clean
// restart the same holds.
func TestLogStartInsideAnAbortedTransaction(t *testing.T) {
	dir := t.TempDir()
	addr := testenv.FreeAddr(t)
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithAddr(addr))
	const topic = "txn-retained"
	createTopic(t, b.Addr, topic, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024")})
	// Uncompressed, so that the transaction spans segments.
	txn := txnClient(t, b.Addr, "retained", topic, kgo.ProducerBatchCompression(kgo.NoCompression()))
	plain := newClient(t, b.Addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pad := strings.Repeat(".", 100)
	write := func(cl *kgo.Client, prefix string, n int) {
		t.Helper()
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d %s", prefix, i, pad)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(plain, "before", 5)
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	write(txn, "aborted", 20) // about two segments
	write(plain, "during", 5)
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	write(plain, "after", 5)
	// The start: inside the aborted transaction, below its marker.
	adm := kadm.NewClient(newClient(t, b.Addr))
	del, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 15}}})
	if err != nil || del.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, del.Error())
	}
	check := func(when string) {
		t.Helper()
		got := consumeIsolated(t, addr, topic, kgo.ReadCommitted(), 10)
		var names []string
		for _, v := range got {
			names = append(names, strings.Fields(v)[0])
		}
		want := []string{"during-0", "during-1", "during-2", "during-3", "during-4", "after-0", "after-1", "after-2", "after-3", "after-4"}
		if !slices.Equal(names, want) {
			t.Fatalf("%s: read_committed read %v, want %v (nothing of the aborted transaction)", when, names, want)
		}
	}
	check("after DeleteRecords")
	b.Stop()
	testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithAddr(addr))
	check("after a restart")
}

// Retention by size deletes the oldest segments under a log holding
// aborted transactions that span segments: whatever segment the log start
// lands on, read_committed consumers read none of their records, and the
// committed records above the start in order.
func TestRetentionOverAbortedTransactions(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.Log.RetentionCheckInterval = 50 * time.Millisecond
	}))
	const topic = "txn-retention"
	createTopic(t, b.Addr, topic, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024"), "retention.bytes": kmsg.StringPtr("4096")})
	cl := txnClient(t, b.Addr, "retention", topic, kgo.ProducerBatchCompression(kgo.NoCompression()))
	pad := strings.Repeat(".", 100)
	var committed []string
	for i := range 10 {
		commit := i%2 == 0
		var recs []*kgo.Record
		for j := range 8 {
			v := fmt.Sprintf("t%d-%d", i, j)
			recs = append(recs, &kgo.Record{Value: []byte(v + " " + pad)})
			if commit {
				committed = append(committed, v)
			}
		}
		produceTxn(t, cl, commit, recs...)
	}
	adm := kadm.NewClient(newClient(t, b.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var start int64
	testenv.Eventually(t, 30*time.Second, "retention deleting the oldest segments", func() bool {
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return false
		}
		o, _ := starts.Lookup(topic, 0)
		start = o.Offset
		return start > 0
	})
	got := consumeIsolated(t, b.Addr, topic, kgo.ReadCommitted(), 1)
	var names []string
	for _, v := range got {
		names = append(names, strings.Fields(v)[0])
	}
	// What is left is a suffix of the committed records: nothing aborted,
	// nothing missing above the first one read.
	if len(names) == 0 || !slices.Equal(names, committed[len(committed)-len(names):]) {
		t.Fatalf("after retention moved the log start to %d, read_committed read %v; want a suffix of the committed %v", start, names, committed)
	}
}
