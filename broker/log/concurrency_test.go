package log

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Appends, acks=all waits, reads, long polls and retention all at once;
// run with -race. Every read must see whole, contiguous, valid batches
// below the high watermark.
func TestConcurrentUse(t *testing.T) {
	clock := newFakeClock()
	cfg := Config{
		SegmentBytes:       4096,
		IndexIntervalBytes: 512,
		FlushInterval:      2 * time.Millisecond,
		FlushMessages:      50,
		RetentionBytes:     64 << 10,
		Clock:              clock.Now,
	}
	l, _ := openLog(t, t.TempDir(), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	const producers, perProducer = 4, 400 // 1000 records each
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < perProducer; i++ {
				res, err := l.Append(makeBatch(batchOpts{records: 1 + i%4, valueSize: 60}))
				if err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					if err := l.WaitFlushed(ctx, res.LastOffset); err != nil && ctx.Err() == nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := int64(0)
			for ctx.Err() == nil && next < producers*1000 {
				changed := l.Changed()
				s, err := l.Read(next, 2000)
				if errors.Is(err, ErrOffsetOutOfRange) {
					next = l.StartOffset()
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if s.Size == 0 {
					select {
					case <-changed:
					case <-ctx.Done():
					}
					continue
				}
				hs := batchesIn(t, readAll(t, s))
				if hs[0].BaseOffset > next || hs[0].NextOffset() <= next {
					t.Errorf("Read(%d) began with batch [%d, %d)", next, hs[0].BaseOffset, hs[0].NextOffset())
					return
				}
				for i := 1; i < len(hs); i++ {
					if hs[i].BaseOffset != hs[i-1].NextOffset() {
						t.Errorf("gap in read at %d", hs[i].BaseOffset)
						return
					}
				}
				if end := hs[len(hs)-1].NextOffset(); end > l.HighWatermark() {
					t.Errorf("read to %d, past the high watermark %d", end, l.HighWatermark())
					return
				}
				next = hs[len(hs)-1].NextOffset()
			}
		}()
	}
	retentionDone := make(chan struct{})
	go func() {
		defer close(retentionDone)
		for ctx.Err() == nil {
			if _, err := l.ApplyRetention(); err != nil {
				t.Error(err)
				return
			}
			l.OffsetForTime(1000)
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("timed out")
	}
	cancel()
	<-retentionDone
	if l.StartOffset() == 0 {
		t.Error("retention never ran: the test wants it to race with reads")
	}
}

func TestProducerIDExpiry(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.Clock = clock.Now
	cfg.ProducerIDExpiry = time.Hour
	l, _ := openLog(t, t.TempDir(), cfg)
	mustAppend(t, l, makeBatch(batchOpts{pid: 3, seq: 0}))
	if _, err := l.Append(makeBatch(batchOpts{pid: 3, seq: 7})); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	clock.Advance(2 * time.Hour)
	l.ApplyRetention()
	mustAppend(t, l, makeBatch(batchOpts{pid: 3, seq: 7})) // forgotten: any sequence goes
}
