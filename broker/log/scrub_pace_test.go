package log

import (
	"sync"
	"testing"
	"time"
)

// Scrubbers sharing a pace read at its one rate together, not each at it:
// two of them reading 256 KiB at once at 1 MiB/s take at least half a
// second. (A lower bound: a slow machine only makes it longer.)
func TestScrubPaceIsSharedByItsScrubbers(t *testing.T) {
	pace := NewScrubPace(1 << 20)
	done := make(chan struct{})
	start := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 16 {
				if err := pace.wait(16<<10, done); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took < 480*time.Millisecond {
		t.Errorf("two scrubbers read 512 KiB in %v at a shared 1 MiB/s, want at least 0.5 s", took)
	}
}

// A scrubber waiting for its turn stops at once when its log closes.
func TestScrubPaceStopsWhenTheLogCloses(t *testing.T) {
	pace := NewScrubPace(1 << 10)
	done := make(chan struct{})
	close(done)
	start := time.Now()
	if err := pace.wait(1<<20, done); err != errScrubStopped {
		t.Fatalf("wait: %v, want errScrubStopped", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("wait took %v after its log closed", took)
	}
}

// BenchmarkScrub measures the CPU a scrub costs per byte, unpaced: what a
// broker pays for --scrub-rate bytes a second is the rate times this.
func BenchmarkScrub(b *testing.B) {
	cfg := Config{SegmentBytes: 8 << 20, FlushInterval: time.Hour, ScrubPace: NewScrubPace(1 << 40)}
	l, _ := openLog(b, b.TempDir(), cfg)
	batch := makeBatch(batchOpts{records: 5, valueSize: 200})
	for range 40_000 {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	var sealed int64
	l.mu.RLock()
	for _, s := range l.segs[:len(l.segs)-1] {
		sealed += s.size
	}
	l.mu.RUnlock()
	b.SetBytes(sealed)
	for b.Loop() {
		if lost, err := l.Scrub(); err != nil || len(lost) != 0 {
			b.Fatal(lost, err)
		}
	}
}
