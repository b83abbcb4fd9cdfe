package loader_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/schema"
)

// A topic written by a transactional producer: one transaction aborted,
// one committed, plain records after them, and one transaction still open
// at the end. A run loads what read_committed readers see (the committed
// transaction and the plain records), leaves the aborted records out
// without reporting their gap as lost, and does not wait for the open
// transaction.
func TestLoadLeavesAbortedTransactionsOut(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "orders", 1)
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	events := loadertest.PageViews(0, 35, 1, from, time.Hour)
	ser, err := schema.NewSerializer(env.Registry, schema.SerializerConfig{Schema: loadertest.Schema(t, "pageview"), Service: "frontend", Server: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	txn, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.TransactionalID("loader-test"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	send := func(evs []loadertest.Event) {
		t.Helper()
		for _, ev := range evs {
			b, err := ser.Serialize(ctx, "orders", ev.Value)
			if err != nil {
				t.Fatal(err)
			}
			if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: b}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	transaction := func(evs []loadertest.Event, end kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		send(evs)
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	transaction(events[0:10], kgo.TryAbort)
	transaction(events[10:20], kgo.TryCommit)
	env.Produce(t, "orders", loadertest.Schema(t, "pageview"), events[20:30])
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	send(events[30:35]) // left open: behind the last stable offset
	defer txn.EndTransaction(context.Background(), kgo.TryAbort)

	url := "file://" + t.TempDir()
	sum := run(t, config(env, url, "orders"))
	if sum.Records != 20 || len(sum.Lost) != 0 {
		t.Fatalf("summary: %d records, lost %v; want the 20 committed and plain records and nothing lost", sum.Records, sum.Lost)
	}
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, openWarehouse(t, url)), "orders", events[10:30])
}
