package log

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// BenchmarkAppend measures acks=1 appends of batches of 200-byte records,
// with each flush policy running in the background: the continuous policy
// fsyncs back to back under load, and fsyncs/op and flushes/op show how
// many appends each one covers.
func BenchmarkAppend(b *testing.B) {
	for _, policy := range []string{"continuous", "interval"} {
		for _, records := range []int{1, 50} {
			b.Run(fmt.Sprintf("flush=%s/records=%d", policy, records), func(b *testing.B) {
				l, _ := openLog(b, b.TempDir(), Config{IntervalFlush: policy == "interval"})
				batch := makeBatch(batchOpts{records: records, valueSize: 200})
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := l.Append(batch); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(l.flushes.Load())/float64(b.N), "flushes/op")
			})
		}
	}
}

// BenchmarkAppendWaitFlushed measures acks=all: concurrent producers each
// waiting for the fsync covering their batch, so group commit decides.
func BenchmarkAppendWaitFlushed(b *testing.B) {
	l, _ := openLog(b, b.TempDir(), Config{})
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		batch := makeBatch(batchOpts{records: 1, valueSize: 200})
		for pb.Next() {
			_, err := appendAcked(l, batch)
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(l.flushes.Load())/float64(b.N), "fsyncs/op")
}

// BenchmarkRead measures locating a fetch's byte range (index probe and
// forward scan) at random offsets, 1 MiB at a time; the bytes themselves
// would go out with sendfile.
func BenchmarkRead(b *testing.B) {
	cfg := Config{SegmentBytes: 64 << 20, FlushInterval: time.Hour}
	l, _ := openLog(b, b.TempDir(), cfg)
	batch := makeBatch(batchOpts{records: 5, valueSize: 200})
	for range 50_000 {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	hw := l.HighWatermark()
	r := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		s, err := l.Read(r.Int64N(hw), 1<<20)
		if err != nil || s.Size == 0 {
			b.Fatal(s.Size, err)
		}
		s.Release()
	}
}

// BenchmarkValidateBatch measures Append's validation alone for a batch of
// 50 200-byte records, uncompressed and with each codec, the records
// walked (after decompressing) each time.
func BenchmarkValidateBatch(b *testing.B) {
	var records []byte
	value := bytes.Repeat([]byte("tributary "), 20)
	for i := range 50 {
		records = append(records, rbtest.Record(int32(i), nil, value)...)
	}
	cases := append([]rbtest.Compressor{{Name: "none", Codec: 0}}, rbtest.Compressors...)
	for _, c := range cases {
		payload := records
		if c.Codec != int16(CodecNone) {
			payload = rbtest.Compress(c, records)
		}
		batch := rbtest.Batch(payload, 50, c.Codec)
		b.Run(c.Name, func(b *testing.B) {
			b.SetBytes(int64(len(records)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := recordbatch.Validate(batch, DefaultMaxDecompressedBytes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadUnchecked measures the read check's cost where it works:
// the first read of a stretch this process has not checked (a segment
// written before a clean restart), 1 MiB a read from a random offset.
func BenchmarkReadUnchecked(b *testing.B) {
	cfg := Config{SegmentBytes: 64 << 20, FlushInterval: time.Hour}
	dir := b.TempDir()
	l, _ := openLog(b, dir, cfg)
	batch := makeBatch(batchOpts{records: 5, valueSize: 200})
	for range 50_000 {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	l, _ = openLog(b, dir, cfg) // clean: nothing checked
	hw := l.HighWatermark()
	r := rand.New(rand.NewPCG(1, 1))
	b.SetBytes(1 << 20)
	for b.Loop() {
		l.mu.RLock()
		for _, s := range l.segs {
			s.checked.clip(0)
		}
		l.mu.RUnlock()
		s, err := l.Read(r.Int64N(hw), 1<<20)
		if err != nil || s.Size == 0 {
			b.Fatal(s.Size, err)
		}
		s.Release()
	}
}
