package mirror_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// A transactional producer in the source datacenter aborts one
// transaction and commits the next: the mirror copies the committed
// records and the plain ones after them, and never the aborted ones
// (it reads the source at read_committed, as the analysis datacenter's
// consumers expect to find only what the source's committed readers see),
// and the gaps the markers and the aborted records leave are not reported
// as records lost.
func TestMirrorCopiesCommittedTransactionsOnly(t *testing.T) {
	const topic = "orders"
	src := startDC(t, "dc1", 1)
	target := testenv.StartBroker(t)
	createTopic(t, src.addrs(), topic, 1)

	txn := newClient(t, src.addrs(), kgo.TransactionalID("mirror-test-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	transaction := func(from, to int, end kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := from; i < to; i++ {
			if err := txn.ProduceSync(ctx, testRecord("dc1", topic, 0, i)).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	transaction(0, 10, kgo.TryAbort)
	transaction(10, 20, kgo.TryCommit)
	produce(t, src.addrs(), "dc1", topic, 1, 20, 30)

	m, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{src.source()}, Target: []string{target.Addr}})
	waitForCount(t, []string{target.Addr}, topic, 20, time.Minute)
	// The source ends at 32 (30 records, two markers): wait until the
	// mirror has read past all of it before looking at what it copied.
	testenv.Eventually(t, 30*time.Second, "the mirror read the whole source", func() bool {
		for _, s := range m.Status().Sources {
			for _, p := range s.Partitions {
				if p.Safe >= 32 {
					return true
				}
			}
		}
		return false
	})
	for _, s := range m.Status().Sources {
		for _, p := range s.Partitions {
			if p.Lost != 0 {
				t.Errorf("partition %d: %d records reported lost; the gaps are transaction markers and an aborted transaction", p.Partition, p.Lost)
			}
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("mirror: %v", err)
	}
	got := checkCopy(t, readTopic(t, []string{target.Addr}, topic))
	want := []int{}
	for i := 10; i < 30; i++ {
		want = append(want, i)
	}
	if s := got[stream{"dc1", 0}]; !slices.Equal(s, want) {
		t.Fatalf("the target holds source records %v, want %v (the committed transaction and the plain records, not the aborted ones)", s, want)
	}
}
