package testenv

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// LatencyRecordSize is the size of the records MeasureLatency sends.
const LatencyRecordSize = 200

// MeasureLatency is the end-to-end latency test users run against Kafka:
// b.N records of LatencyRecordSize bytes, one per millisecond (1,000/s),
// through prod (whose default topic must be set), each carrying its send
// time; cons, already sitting at the end of wherever they arrive, reads
// them. It reports the p50 and p99 of (receive - send) as p50-ms and p99-ms.
// Records of another size (a warm-up) are not counted.
func MeasureLatency(b *testing.B, prod, cons *kgo.Client) {
	ctx := context.Background()
	latencies := make([]time.Duration, 0, b.N)
	done := make(chan error, 1)
	go func() {
		for len(latencies) < b.N {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				done <- err
				return
			}
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) == LatencyRecordSize {
					latencies = append(latencies, now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(r.Value)))))
				}
			})
		}
		done <- nil
	}()

	b.ResetTimer()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for range b.N {
		<-tick.C
		v := make([]byte, LatencyRecordSize)
		binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
		prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	select {
	case err := <-done:
		if err != nil {
			b.Fatal(err)
		}
	case <-time.After(time.Minute):
		b.Fatalf("the consumer saw %d of %d records", len(latencies), b.N)
	}
	b.StopTimer()
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
