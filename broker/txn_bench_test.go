package broker_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

var txnPeer = flag.String("txn.peer", "", "bootstrap address of another Kafka-protocol broker (Apache Kafka from scripts/bench/peer.sh) that BenchmarkTransactionalProduce measures beside Tributary")

// BenchmarkTransactionalProduce: one kgo transactional producer commits
// transactions of 100 records of 100 bytes spread over 3 partitions, one
// after another (Begin, produce, Flush, EndTransaction), against an
// in-process Tributary and, with -txn.peer, another broker in the same
// run. It reports records and transactions a second.
//
//	scripts/bench/peer.sh start kafka /tmp/kpeer 29400
//	go test -run '^$' -bench BenchmarkTransactionalProduce ./broker/ -txn.peer=127.0.0.1:29400
func BenchmarkTransactionalProduce(b *testing.B) {
	targets := []struct{ name, addr string }{{"tributary", testenv.StartBroker(b).Addr}}
	if *txnPeer != "" {
		targets = append(targets, struct{ name, addr string }{"peer", *txnPeer})
	}
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			topic := fmt.Sprintf("txn-bench-%d", time.Now().UnixNano())
			adm := kadm.NewClient(newClient(b, tg.addr))
			if _, err := adm.CreateTopic(context.Background(), 3, 1, nil, topic); err != nil {
				b.Fatal(err)
			}
			cl := newClient(b, tg.addr, kgo.TransactionalID(topic), kgo.DefaultProduceTopic(topic),
				kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
			ctx := context.Background()
			value := make([]byte, 100)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if err := cl.BeginTransaction(); err != nil {
					b.Fatal(err)
				}
				for range 100 {
					cl.Produce(ctx, &kgo.Record{Value: value}, nil)
				}
				if err := cl.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					b.Fatal(err)
				}
			}
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N)/secs, "txn/s")
			b.ReportMetric(float64(b.N*100)/secs, "records/s")
		})
	}
}
