package log

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
		_, err := appendAcked(l, batch)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(l.fsyncs.Load())/float64(b.N), "fsyncs/op")
}

// BenchmarkAppendWaitFlushedPartitions is the pipelined acks=all capacity
// row without the network: eight partitions, each with 16 producers
// appending one 50-record batch of 200-byte records and waiting for the
// flush that covers it (eight connections of 16 requests in flight, spread
// over eight partitions). An op is one batch. cpu-µs/op is the process's
// CPU time (user and system) per batch, the figure that holds on a machine
// whose other load changes the wall time; fsyncs/op shows how much each
// fsync covers. Unlike the connections, the producers here are
// independent: none waits for another's answer to go out first.
func BenchmarkAppendWaitFlushedPartitions(b *testing.B) {
	const partitions, producers = 8, 16
	logs := make([]*Log, partitions)
	for i := range logs {
		logs[i], _ = openLog(b, b.TempDir(), Config{})
	}
	b.SetBytes(int64(len(makeBatch(batchOpts{records: 50, valueSize: 200}))))
	b.ReportAllocs()
	var next atomic.Int64
	cpu0 := processCPU(b)
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := range partitions * producers {
		l := logs[p%partitions]
		wg.Go(func() {
			batch := makeBatch(batchOpts{records: 50, valueSize: 200})
			for next.Add(1) <= int64(b.N) {
				_, err := appendAcked(l, batch)
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	var fsyncs int64
	for _, l := range logs {
		fsyncs += l.fsyncs.Load()
	}
	b.ReportMetric(float64(fsyncs)/float64(b.N), "fsyncs/op")
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time the process has used so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
