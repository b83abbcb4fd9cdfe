package compat_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// kafkaTransactions is the main class of kafka-transactions.sh.
const kafkaTransactions = "org.apache.kafka.tools.TransactionsCommand"

// TestKafkaTransactionsAbortsAHangingTransaction: Kafka 4.4's
// kafka-transactions lists and describes an open transaction on a
// standalone broker, describe-producers shows where it starts,
// find-hanging runs, and `abort --start-offset` aborts it there
// (DescribeProducers, then
// WriteTxnMarkers from the tool): the last stable offset moves past it and
// a read_committed consumer skips its records. (A standalone broker once
// refused every WriteTxnMarkers that did not come from another broker, so
// the tool could not abort anything.)
func TestKafkaTransactionsAbortsAHangingTransaction(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	const topic = "hanging"
	// A transaction left open: its producer neither commits nor aborts,
	// and its timeout is long, so only the tool ends it.
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.TransactionalID("stuck-app"),
		kgo.TransactionTimeout(10*time.Minute), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	tool := func(args ...string) testenv.KafkaToolRun {
		return testenv.KafkaToolRun{Class: kafkaTransactions, Args: append([]string{"--bootstrap-server", b.Addr}, args...)}
	}
	res := testenv.RunKafkaTools(t,
		tool("list"),
		tool("describe", "--transactional-id", "stuck-app"),
		tool("describe-producers", "--topic", topic, "--partition", "0"),
		tool("find-hanging", "--broker-id", "0"),
		tool("abort", "--topic", topic, "--partition", "0", "--start-offset", "0"),
	)
	// find-hanging looks at every open transaction of the broker's
	// partitions (DescribeProducers, ListTransactions, DescribeTransactions)
	// and finds none hanging: the coordinator knows this one.
	for i, want := range []string{"stuck-app", "Ongoing", "0", "Topic\tPartition\tProducerId", ""} {
		if r := res[i]; r.Exit != 0 || !strings.Contains(r.Stdout, want) {
			t.Errorf("kafka-transactions %s: want exit 0 and %q in its output:\n%v", r.Run.Args[2], want, r)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// A record after the aborted transaction is the first a read_committed
	// consumer reads.
	plain, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	fs := cons.PollFetches(pctx)
	if recs := fs.Records(); len(recs) == 0 || string(recs[0].Value) != "after" {
		var got []string
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
		t.Fatalf("read_committed read %q (errors %v), want the record after the aborted transaction first", got, fs.Errors())
	}
}
