package broker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// BenchmarkProduceTopicCodec is BenchmarkProduce's batch=50 acks=1 case
// (one kgo producer sending uncompressed batches of 50 200-byte records)
// against topics whose compression.type keeps the producer's batches
// (producer) or makes the broker re-encode each one (zstd, gzip, ...):
// the cost of recompression on append. The values are log-line-like text
// with random fields, so codecs have something realistic to compress;
// stored-B/msg is what a message then takes on disk.
//
//	go test -run '^$' -bench BenchmarkProduceTopicCodec -benchtime 200000x -count 3 ./broker/
func BenchmarkProduceTopicCodec(b *testing.B) {
	for _, codec := range []string{"producer", "zstd", "gzip", "lz4", "snappy"} {
		b.Run("compression.type="+codec, func(b *testing.B) {
			dir := b.TempDir()
			br := testenv.StartBroker(b, testenv.WithDataDir(dir))
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.DefaultProduceTopic("bench"),
				kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
				kgo.ProducerBatchMaxBytes(batchMaxBytes(50)), kgo.MaxBufferedRecords(100_000),
				kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			create := kmsg.NewPtrCreateTopicsRequest()
			ct := kmsg.NewCreateTopicsRequestTopic()
			ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "bench", 1, 1
			ct.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "compression.type", Value: kmsg.StringPtr(codec)}}
			create.Topics = append(create.Topics, ct)
			if resp, err := create.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
				b.Fatalf("creating the topic: %v %+v", err, resp)
			}
			values := logLines(1024)
			timeProduce(b, cl, func(i int) []byte { return values[i%len(values)] })
			segs, _ := filepath.Glob(filepath.Join(dir, "bench-0", "*.log"))
			var stored int64
			for _, s := range segs {
				if fi, err := os.Stat(s); err == nil {
					stored += fi.Size()
				}
			}
			b.ReportMetric(float64(stored)/float64(b.N), "stored-B/msg")
		})
	}
}

// logLines are n distinct 200-byte values shaped like a web server's
// events: repeated field names, a few hundred pages, random ids.
func logLines(n int) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		v := fmt.Appendf(nil, `{"time":%d,"service":"frontend-%02d","page":"/profile/view/%d","member":%d,"session":"%016x","status":200,"agent":"Mozilla/5.0"`,
			1_700_000_000_000+r.Int64N(1e9), r.IntN(40), r.IntN(500), r.Int64N(1e9), r.Uint64())
		for len(v) < benchValueSize-1 {
			v = append(v, ' ')
		}
		out[i] = append(v[:benchValueSize-1], '}')
	}
	return out
}
