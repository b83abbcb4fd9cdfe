package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// BenchmarkReplicatedProduce measures acks=all produce of 200-byte
// messages in batches of 50 to a one-partition topic on three in-process
// brokers sharing a real ZooKeeper, with replication factor 1 and 3
// (min.insync.replicas 2): with 3, each batch is answered once both
// followers fetched and fsynced it. All three brokers share this
// process's CPU and disk. Compare runs with benchstat; never assert on
// the figures.
//
//	go test -run '^$' -bench BenchmarkReplicatedProduce -benchtime 100000x ./broker/
func BenchmarkReplicatedProduce(b *testing.B) {
	for _, rf := range []int16{1, 3} {
		b.Run(fmt.Sprintf("rf=%d", rf), func(b *testing.B) {
			_, brokers := testenv.StartCluster(b, 3)
			seeds := []string{brokers[0].Addr, brokers[1].Addr, brokers[2].Addr}
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("bench"),
				kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
				kgo.ProducerBatchMaxBytes(batchMaxBytes(50)), kgo.MaxBufferedRecords(100_000))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			deadline := time.Now().Add(10 * time.Second)
			for {
				resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, rf, nil, "bench")
				if err == nil && resp.Err == nil {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("creating the topic: %v %v", err, resp.Err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			value := bytes.Repeat([]byte("x"), benchValueSize)
			for {
				err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal(err)
				}
			}
			timeProduce(b, cl, func(int) []byte { return value })
		})
	}
}
