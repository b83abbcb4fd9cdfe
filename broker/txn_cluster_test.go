package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Transactions on a three-broker ZooKeeper cluster: the coordinator (the
// leader of the id's replicated __transaction_state partition) verifies
// produces to partitions other brokers lead and writes its markers there
// with WriteTxnMarkers; read_committed consumers read exactly the
// committed records.
func TestKgoTransactionsInZooKeeperCluster(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 3, testenv.WithConfig(func(c *broker.Config) {
		c.DefaultReplicationFactor = 3
		c.MinInsyncReplicas = 2
		c.Transactions.Partitions = 3
	}))
	seeds := kgo.SeedBrokers(brokers[0].Addr, brokers[1].Addr, brokers[2].Addr)
	adm := kadm.NewClient(newClientOpts(t, seeds))
	ctx := context.Background()
	testenv.Eventually(t, 20*time.Second, "creating ctxn with 3 replicas", func() bool {
		resp, err := adm.CreateTopic(ctx, 3, 3, nil, "ctxn")
		err = errors.Join(err, resp.Err)
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	})
	testenv.Eventually(t, 30*time.Second, "ctxn led on three brokers", func() bool {
		m, err := adm.Metadata(ctx, "ctxn")
		if err != nil {
			return false
		}
		leaders := map[int32]bool{}
		for _, p := range m.Topics["ctxn"].Partitions {
			if p.Leader < 1 || len(p.ISR) < 2 {
				return false
			}
			leaders[p.Leader] = true
		}
		return len(leaders) == 3
	})
	cl := newClientOpts(t, seeds, kgo.TransactionalID("cluster-txn"), kgo.DefaultProduceTopic("ctxn"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(30*time.Second))
	var committed []string
	for i := range 6 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := i%2 == 0
		for j := range 12 {
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
			t.Fatalf("ending transaction %d: %v", i, err)
		}
	}
	got := consumeIsolated(t, brokers[1].Addr, "ctxn", kgo.ReadCommitted(), len(committed))
	wantExactly(t, got, committed)
}

func newClientOpts(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
