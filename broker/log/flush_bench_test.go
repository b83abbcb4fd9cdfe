package log

import (
	"context"
	"testing"
)

// BenchmarkAppendWaitFlushedSerial is one acks=all producer sending one
// 50-record batch at a time (kgo's producer at batch 50 with one request in
// flight): each op is an append and the wait for the flush that covers it,
// so ns/op is the latency a flush adds to every request. fsyncs/op counts
// the fsync calls of data and index files.
func BenchmarkAppendWaitFlushedSerial(b *testing.B) {
	l, _ := openLog(b, b.TempDir(), Config{})
	batch := makeBatch(batchOpts{records: 50, valueSize: 200})
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := l.Append(batch)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.WaitFlushed(context.Background(), res.LastOffset); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(l.fsyncs.Load())/float64(b.N), "fsyncs/op")
}
