package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
)

// A topic written in transactions, ending in a commit marker: a scan
// counts the committed events only, not the aborted ones, and finishes
// although the partition's last offset is a marker, which no consumer is
// handed as a record.
func TestScanCountsCommittedTransactionsOnly(t *testing.T) {
	env := audittest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ser := serializer(t, env, noHeader)
	txn, err := kgo.NewClient(kgo.SeedBrokers(env.Broker.Addr), kgo.TransactionalID("audit-scan-test"), kgo.DefaultProduceTopic("orders"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	transaction := func(n int, end kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			b, err := ser.Serialize(ctx, "orders", map[string]any{"n": int64(i)})
			if err != nil {
				t.Fatal(err)
			}
			if err := txn.ProduceSync(ctx, &kgo.Record{Value: b}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	transaction(7, kgo.TryAbort)
	transaction(5, kgo.TryCommit)
	c, _, err := audit.Scan(ctx, audit.ScanConfig{Brokers: []string{env.Broker.Addr}, Registry: env.Registry, Topics: []string{"orders"}})
	if err != nil {
		t.Fatal(err)
	}
	if n, noTime, malformed := c.Total(); n != 0 || noTime != 5 || malformed != 0 {
		t.Errorf("scan counted %d in windows, %d without time, %d malformed; want the 5 committed events (which have no header time), none aborted", n, noTime, malformed)
	}
}
