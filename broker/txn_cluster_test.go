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

// A commit whose markers cannot all be written (a partition's only
// replica is down) is still a commit: EndTxn answers once the decision is
// durable, the transaction stays PrepareCommit, and the coordinator writes
// the marker once the partition's broker is back, after which
// read_committed consumers read the record.
func TestDecidedCommitCompletesWhenTheLeaderReturns(t *testing.T) {
	txnConfig := testenv.WithConfig(func(c *broker.Config) {
		c.Transactions.Partitions = 1
		c.Transactions.CheckInterval = 100 * time.Millisecond
	})
	connect, brokers := testenv.StartCluster(t, 2, txnConfig)
	seeds := kgo.SeedBrokers(brokers[0].Addr, brokers[1].Addr)
	adm := kadm.NewClient(newClientOpts(t, seeds))
	ctx := context.Background()
	// The coordinator: whoever leads the one state partition, created by
	// the first FindCoordinator.
	cl := newClientOpts(t, seeds, kgo.TransactionalID("decided"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(60*time.Second))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var coordinator int32
	testenv.Eventually(t, 20*time.Second, "the transaction state partition led", func() bool {
		m, err := adm.Metadata(ctx, "__transaction_state")
		if err != nil || len(m.Topics["__transaction_state"].Partitions) != 1 {
			return false
		}
		coordinator = m.Topics["__transaction_state"].Partitions[0].Leader
		return coordinator > 0
	})
	other, id := brokers[0], int32(1) // StartCluster numbers brokers from 1
	if coordinator == 1 {
		other, id = brokers[1], 2
	}
	testenv.Eventually(t, 20*time.Second, "creating the topic", func() bool {
		resp, err := adm.CreateTopic(ctx, 2, 1, nil, "decided")
		err = errors.Join(err, resp.Err)
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	})
	var p int32 = -1
	testenv.Eventually(t, 20*time.Second, "a partition of the topic on the other broker", func() bool {
		m, err := adm.Metadata(ctx, "decided")
		if err != nil {
			return false
		}
		for _, pd := range m.Topics["decided"].Partitions {
			if pd.Leader == id {
				p = pd.Partition
			}
		}
		return p >= 0
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "decided", Partition: p, Value: []byte("decided")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	addr, dir := other.Addr, other.DataDir
	other.Stop()
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("the commit with a partition's broker down: %v (the decision is durable: it should be answered)", err)
	}
	// kadm may ask the stopped broker first: retried.
	testenv.Eventuallyf(t, 20*time.Second, func() (bool, string) {
		d, err := adm.DescribeTransactions(ctx, "decided")
		if err != nil {
			return false, err.Error()
		}
		return d["decided"].State == "PrepareCommit", "with the marker not written the transaction is " + d["decided"].State + ", want PrepareCommit"
	})
	back := testenv.StartClusterBroker(t, connect, id, testenv.WithDataDir(dir), testenv.WithAddr(addr), txnConfig)
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		d, err := adm.DescribeTransactions(ctx, "decided")
		if err != nil {
			return false, err.Error()
		}
		return d["decided"].State == "CompleteCommit", "state " + d["decided"].State
	})
	got := consumeIsolated(t, back.Addr, "decided", kgo.ReadCommitted(), 1)
	wantExactly(t, got, []string{"decided"})
}
