package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// consumeAll reads topic from the start at the isolation level until
// want records arrived, then for a while longer, and returns the values.
func consumeIsolated(t *testing.T, addr, topic string, level kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	quiet := time.Time{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				t.Fatalf("fetch %s[%d]: %v", e.Topic, e.Partition, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		switch {
		case len(got) >= want && quiet.IsZero():
			quiet = time.Now().Add(time.Second) // anything that should not be there has time to show
		case !quiet.IsZero() && time.Now().After(quiet):
			return got
		case time.Now().After(deadline):
			t.Fatalf("read %d of %d records from %s", len(got), want, topic)
		}
	}
}

func txnClient(t *testing.T, addr, id, topic string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, addr, append([]kgo.Opt{kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(20 * time.Second)}, opts...)...)
}

// A kgo transactional producer commits and aborts in turn; a read_committed
// consumer sees exactly the committed records, a read_uncommitted one all.
func TestKgoTransactionsCommitAndAbort(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "txn-out", 3, nil)
	cl := txnClient(t, b.Addr, "txn-commit-abort", "txn-out")
	ctx := context.Background()
	var committed []string
	for i := range 10 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := i%2 == 0 || i == 9
		for j := range 20 {
			v := fmt.Sprintf("abort-%d-%d", i, j)
			if commit {
				v = fmt.Sprintf("commit-%d-%d", i, j)
				committed = append(committed, v)
			}
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %s: %v", v, err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("ending transaction %d (commit %v): %v", i, commit, err)
		}
	}
	got := consumeIsolated(t, b.Addr, "txn-out", kgo.ReadCommitted(), len(committed))
	wantExactly(t, got, committed)
	all := consumeIsolated(t, b.Addr, "txn-out", kgo.ReadUncommitted(), 200)
	if len(all) != 200 {
		t.Fatalf("read_uncommitted read %d records, want all 200", len(all))
	}

	adm := kadm.NewClient(newClient(t, b.Addr))
	desc, err := adm.DescribeTransactions(ctx, "txn-commit-abort")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := desc["txn-commit-abort"]
	if !ok || d.Err != nil || d.State != "CompleteCommit" {
		t.Fatalf("DescribeTransactions: %+v", desc)
	}
	list, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListTransactions: %v %+v", err, list)
	}
	markers := map[string]float64{}
	for _, m := range gather(t, b)["tributary_transaction_markers_total"].GetMetric() {
		markers[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	// One marker per partition a transaction wrote to: 20 records over 3.
	if markers["commit"] != 6*3 || markers["abort"] != 4*3 {
		t.Errorf("markers written %v, want 18 commits and 12 aborts", markers)
	}
}

// wantExactly fails unless got holds each of want once and nothing else.
func wantExactly(t *testing.T, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for _, v := range want {
		if seen[v] != 1 {
			t.Errorf("%s read %d times, want once", v, seen[v])
		}
		delete(seen, v)
	}
	for v := range seen {
		t.Errorf("%s read, never committed", v)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// An open transaction holds read_committed consumers at its first offset
// (ListOffsets too) until it commits; read_uncommitted ones read on.
func TestKgoOpenTransactionHoldsReadCommitted(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "txn-open", 1, nil)
	ctx := context.Background()
	produceValues(t, b.Addr, "txn-open", 0, 5)
	cl := txnClient(t, b.Addr, "txn-open", "txn-open")
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("pending")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produceValues(t, b.Addr, "txn-open", 5, 8) // after the open transaction's record
	if got := consumeIsolated(t, b.Addr, "txn-open", kgo.ReadCommitted(), 5); len(got) != 5 {
		t.Fatalf("read_committed read %v past the open transaction", got)
	}
	if got := consumeIsolated(t, b.Addr, "txn-open", kgo.ReadUncommitted(), 9); len(got) != 9 {
		t.Fatalf("read_uncommitted read %d records, want 9", len(got))
	}
	adm := kadm.NewClient(newClient(t, b.Addr))
	stable, err := adm.ListCommittedOffsets(ctx, "txn-open")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := stable.Lookup("txn-open", 0); o.Offset != 5 {
		t.Fatalf("read_committed latest offset %d, want 5 (the open transaction's first)", o.Offset)
	}
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"txn-open": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	open := 0
	producers.EachProducer(func(p kadm.DescribedProducer) {
		if p.CurrentTxnStartOffset == 5 {
			open++
		}
	})
	if open != 1 {
		t.Fatalf("DescribeProducers shows %d producers with a transaction open at 5, want 1: %+v", open, producers)
	}
	m := gather(t, b)
	if v := m["tributary_transactions_open"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("tributary_transactions_open %v, want 1", v)
	}
	if lag := m["tributary_partition_lso_lag"].GetMetric(); len(lag) != 1 || lag[0].GetGauge().GetValue() != 4 {
		t.Errorf("tributary_partition_lso_lag %v, want one partition 4 behind (the open record and 3 after it)", lag)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := consumeIsolated(t, b.Addr, "txn-open", kgo.ReadCommitted(), 9); len(got) != 9 {
		t.Fatalf("after the commit read_committed read %d records, want 9", len(got))
	}
}

// A second instance with the same transactional id fences the first: the
// first's open transaction is aborted, its commit refused, and
// read_committed consumers never see its records.
func TestKgoZombieProducerIsFenced(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "txn-zombie", 2, nil)
	ctx := context.Background()
	zombie := txnClient(t, b.Addr, "txn-zombie", "txn-zombie")
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := txnClient(t, b.Addr, "txn-zombie", "txn-zombie")
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, &kgo.Record{Value: []byte("fresh")}).FirstErr(); err != nil {
		t.Fatalf("the new instance's produce: %v", err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	err := zombie.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced instance's commit: %v, want PRODUCER_FENCED", err)
	}
	got := consumeIsolated(t, b.Addr, "txn-zombie", kgo.ReadCommitted(), 1)
	wantExactly(t, got, []string{"fresh"})
}

// A transaction left open past its timeout is aborted by the coordinator.
func TestKgoTransactionTimeoutAborts(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.Transactions.CheckInterval = 50 * time.Millisecond
	}))
	createTopic(t, b.Addr, "txn-timeout", 1, nil)
	ctx := context.Background()
	cl := txnClient(t, b.Addr, "txn-timeout", "txn-timeout", kgo.TransactionTimeout(time.Second))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("forgotten")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, b.Addr))
	testenv.Eventuallyf(t, 20*time.Second, func() (bool, string) {
		desc, err := adm.DescribeTransactions(ctx, "txn-timeout")
		if err != nil {
			return false, err.Error()
		}
		s := desc["txn-timeout"].State
		return s == "CompleteAbort", "transaction state " + s
	})
	produceValues(t, b.Addr, "txn-timeout", 0, 1)
	got := consumeIsolated(t, b.Addr, "txn-timeout", kgo.ReadCommitted(), 1)
	if len(got) != 1 || strings.Contains(got[0], "forgotten") {
		t.Fatalf("read_committed read %v", got)
	}
}
