package log

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ReadUpTo never returns records at or past end, even while flushes move
// the flushed end under it. It once checked end against the flushed end,
// let go of the log's lock and read to the flushed end as it was by then:
// a flush in between handed a read_committed consumer the records of a
// transaction still open at end (the Jepsen test of transactions read an
// aborted transaction's records so) and could hand any consumer records
// past the replicated high watermark.
func TestReadUpToStopsAtEndWhileFlushesMoveOn(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, l, makeBatch(batchOpts{}))
	mustFlush(t, l)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var appended atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.Append(makeBatch(batchOpts{})); err != nil {
				t.Error(err)
				return
			}
			appended.Add(1)
			if err := l.Flush(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	reads := 0
	for time.Now().Before(deadline) && !t.Failed() {
		end := l.HighWatermark()
		s, err := l.ReadUpTo(end, 1<<20, end)
		if err != nil {
			t.Fatal(err)
		}
		if s.Size > 0 {
			s.Release()
			t.Errorf("ReadUpTo(%d, end %d) returned %d bytes: records at or past end", end, end, s.Size)
			break
		}
		reads++
	}
	close(stop)
	wg.Wait()
	if !t.Failed() && appended.Load() < 10 {
		t.Fatalf("only %d appends ran beside %d reads: the race was not exercised", appended.Load(), reads)
	}
}
