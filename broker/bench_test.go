package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// The paper's message size.
const benchValueSize = 200

// batchMaxBytes fits exactly n 200-byte records in one record batch: a
// record costs ~209 bytes inside a batch and a batch header 61.
func batchMaxBytes(n int) int32 { return int32(61 + n*209 + 100) }

// BenchmarkProduce measures one kgo producer against one in-process broker
// with 200-byte messages on a one-partition topic, so one batch per request:
//   - batch=50: 50 records per batch, requests pipelined;
//   - batch=1: one record buffered at a time (kgo's smallest batch limit,
//     512 bytes, would take two), so every record is its own request; with
//     acks=0 that is the paper's fire-and-forget producer, with acks=1 and
//     acks=all each request waits for its answer.
//
// acks=1 is answered after the append, acks=all after the fsync. Compare
// runs with benchstat; never assert on the figures.
//
//	go test -run '^$' -bench BenchmarkProduce -benchtime 200000x ./broker/
func BenchmarkProduce(b *testing.B) {
	for _, batch := range []int{1, 50} {
		for _, acks := range []string{"0", "1", "all"} {
			b.Run(fmt.Sprintf("batch=%d/acks=%s", batch, acks), func(b *testing.B) {
				br := testenv.StartBroker(b)
				opts := []kgo.Opt{
					kgo.SeedBrokers(br.Addr), kgo.DefaultProduceTopic("bench"), kgo.AllowAutoTopicCreation(),
					kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
				}
				if batch == 1 {
					opts = append(opts, kgo.MaxBufferedRecords(1))
				} else {
					opts = append(opts, kgo.ProducerBatchMaxBytes(batchMaxBytes(batch)), kgo.MaxBufferedRecords(100_000))
				}
				switch acks {
				case "0":
					opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
				case "1":
					opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
				}
				cl, err := kgo.NewClient(opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
				value := bytes.Repeat([]byte("x"), benchValueSize)
				ctx := context.Background()
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					b.Fatal(err)
				}
				timeProduce(b, cl, func(int) []byte { return value })
			})
		}
	}
}

// timeProduce times b.N records of benchValueSize bytes produced through
// cl (value gives the i-th), from the first send to the last
// acknowledgement, and reports msgs/s and the process's CPU per message.
// Any record that fails fails the benchmark.
func timeProduce(b *testing.B, cl *kgo.Client, value func(i int) []byte) {
	ctx := context.Background()
	b.SetBytes(benchValueSize)
	cpu := cpuTime()
	b.ResetTimer()
	var mu sync.Mutex
	var failed error
	for i := range b.N {
		cl.Produce(ctx, &kgo.Record{Value: value(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		b.Fatal(failed)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process (client and broker alike) has used:
// on a machine shared with other work it measures the cost of a produce far
// more steadily than wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFetch measures one kgo consumer reading 200-byte messages (in
// batches of 50) from the start of a partition whose data is in the page
// cache, fetching up to ~200 KB per request as in the paper.
//
//	go test -run '^$' -bench BenchmarkFetch -benchtime 500000x ./broker/
func BenchmarkFetch(b *testing.B) {
	br := testenv.StartBroker(b)
	prod, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.DefaultProduceTopic("bench"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchMaxBytes(batchMaxBytes(50)), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	value := bytes.Repeat([]byte("y"), benchValueSize)
	for range b.N {
		prod.Produce(context.Background(), &kgo.Record{Value: value}, nil)
	}
	if err := prod.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	prod.Close()

	cons, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.ConsumeTopics("bench"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(200<<10), kgo.FetchMaxPartitionBytes(200<<10))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	b.SetBytes(benchValueSize)
	b.ResetTimer()
	for seen := 0; seen < b.N; {
		fs := cons.PollFetches(context.Background())
		if err := fs.Err(); err != nil {
			b.Fatal(err)
		}
		seen += fs.NumRecords()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
