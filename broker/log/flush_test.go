package log

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestHighWatermarkWaitsForFlush(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	ch := l.Changed()
	mustAppend(t, l, makeBatch(batchOpts{records: 3}))
	if l.HighWatermark() != 0 || l.LogEndOffset() != 3 {
		t.Fatalf("HW %d LEO %d before flush, want 0 and 3", l.HighWatermark(), l.LogEndOffset())
	}
	select {
	case <-ch:
		t.Fatal("Changed fired before the high watermark moved")
	default:
	}
	if s, err := l.Read(0, 1000); err != nil || s.Size != 0 {
		t.Fatalf("unflushed data readable: size %d, %v", s.Size, err)
	}
	mustFlush(t, l)
	if l.HighWatermark() != 3 {
		t.Fatalf("HW %d after flush, want 3", l.HighWatermark())
	}
	select {
	case <-ch:
	default:
		t.Fatal("Changed did not fire when the high watermark moved")
	}
	if before := l.fsyncs.Load(); mustFlushCount(t, l) != before {
		t.Fatal("a flush with nothing new fsynced")
	}
}

func mustFlushCount(t *testing.T, l *Log) int64 {
	mustFlush(t, l)
	return l.fsyncs.Load()
}

func TestFlushMessagesTriggersFlush(t *testing.T) {
	cfg := testConfig()
	cfg.FlushMessages = 10
	l, _ := openLog(t, t.TempDir(), cfg)
	mustAppend(t, l, makeBatch(batchOpts{records: 9}))
	time.Sleep(20 * time.Millisecond)
	if l.HighWatermark() != 0 {
		t.Fatalf("flushed after 9 of 10 messages")
	}
	ch := l.Changed()
	mustAppend(t, l, makeBatch(batchOpts{records: 1}))
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no flush after FlushMessages messages")
	}
	if l.HighWatermark() != 10 {
		t.Fatalf("HW = %d, want 10", l.HighWatermark())
	}
}

func TestFlushIntervalTriggersFlush(t *testing.T) {
	cfg := testConfig()
	cfg.FlushInterval = 20 * time.Millisecond
	l, _ := openLog(t, t.TempDir(), cfg)
	for i := range 3 {
		ch := l.Changed()
		start := time.Now()
		mustAppend(t, l, makeBatch(batchOpts{}))
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: no flush after FlushInterval", i)
		}
		if d := time.Since(start); d < 15*time.Millisecond {
			t.Fatalf("round %d: flushed after %v, before FlushInterval", i, d)
		}
		if l.HighWatermark() != int64(i+1) {
			t.Fatalf("HW = %d, want %d", l.HighWatermark(), i+1)
		}
	}
}

func TestWaitFlushedGroupCommit(t *testing.T) {
	const waiters = 200
	l, _ := openLog(t, t.TempDir(), testConfig())
	offsets := make([]int64, waiters)
	for i := range offsets {
		offsets[i] = mustAppend(t, l, makeBatch(batchOpts{})).BaseOffset
	}
	before := l.flushes.Load()
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	start := make(chan struct{})
	for _, off := range offsets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- l.WaitFlushed(context.Background(), off)
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := l.flushes.Load() - before; n < 1 || n > 2 {
		t.Fatalf("%d flushes for %d concurrent waiters, want 1 or 2", n, waiters)
	}
	if l.HighWatermark() != waiters {
		t.Fatalf("HW = %d, want %d", l.HighWatermark(), waiters)
	}
}

// Appends and waits interleaved from many goroutines, the way acks=all
// producers use the log: every wait returns and fsyncs stay far fewer than
// appends.
func TestWaitFlushedConcurrentProducers(t *testing.T) {
	const producers, perProducer = 20, 50
	l, _ := openLog(t, t.TempDir(), testConfig())
	var wg sync.WaitGroup
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perProducer {
				_, err := appendAcked(l, makeBatch(batchOpts{}))
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	n := l.flushes.Load()
	t.Logf("%d appends, %d flushes", producers*perProducer, n)
	if n >= producers*perProducer {
		t.Fatalf("%d flushes for %d appends: no group commit", n, producers*perProducer)
	}
}

func TestWaitFlushedCloseAndCancel(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitFlushed(ctx, 5); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFlushed with a cancelled context: %v", err)
	}
	done := make(chan error)
	go func() { done <- l.WaitFlushed(context.Background(), 100) }()
	time.Sleep(10 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("WaitFlushed on Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitFlushed did not return on Close")
	}
}

func TestCloseFlushes(t *testing.T) {
	dir := t.TempDir()
	l, _ := openLog(t, dir, testConfig())
	mustAppend(t, l, makeBatch(batchOpts{records: 4}))
	ch := l.Changed()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	<-ch
	l2, rep := openLog(t, dir, testConfig())
	if !rep.Clean || l2.HighWatermark() != 4 || l2.LogEndOffset() != 4 {
		t.Fatalf("after Close and Open: %+v, HW %d, LEO %d", rep, l2.HighWatermark(), l2.LogEndOffset())
	}
}

// With the default (continuous) flush a record becomes visible one fsync
// after it arrives, however long FlushInterval and FlushMessages are.
func TestContinuousFlushShowsDataWithoutWaitingForTheInterval(t *testing.T) {
	cfg := testConfig()
	cfg.IntervalFlush = false
	l, _ := openLog(t, t.TempDir(), cfg)
	for i := range 20 {
		ch := l.Changed()
		mustAppend(t, l, makeBatch(batchOpts{records: 2}))
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no flush although FlushInterval is an hour away", i)
		}
		if hw := l.HighWatermark(); hw != int64(2*(i+1)) {
			t.Fatalf("round %d: HW %d, want %d", i, hw, 2*(i+1))
		}
	}
}

// Under a stream of appends each fsync covers everything appended during
// the previous one: far fewer flushes than appends, and nothing is left
// unflushed once the appends stop.
func TestContinuousFlushCoalescesAppends(t *testing.T) {
	cfg := testConfig()
	cfg.IntervalFlush = false
	l, _ := openLog(t, t.TempDir(), cfg)
	const appends = 2000
	for range appends {
		mustAppend(t, l, makeBatch(batchOpts{}))
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.HighWatermark() != appends {
		if time.Now().After(deadline) {
			t.Fatalf("HW %d, want %d: the last appends were never flushed", l.HighWatermark(), appends)
		}
		time.Sleep(time.Millisecond)
	}
	if n := l.flushes.Load(); n >= appends {
		t.Fatalf("%d flushes for %d appends: fsyncs did not coalesce", n, appends)
	}
}

// TestFlushBusyByRate checks when a flush leaves its partition busy (and
// so followed by busyFlushGap): at 100,000 messages a second or more,
// however few messages each fast fsync covers, but not after a quiet spell.
func TestFlushBusyByRate(t *testing.T) {
	for _, c := range []struct {
		covered int64
		span    time.Duration
		busy    bool
	}{
		{covered: 2000, span: time.Hour, busy: true},               // many messages, however slowly
		{covered: 300, span: 700 * time.Microsecond, busy: true},   // 430k/s behind a sub-millisecond fsync
		{covered: 100, span: time.Millisecond, busy: true},         // exactly 100k/s
		{covered: 99, span: time.Millisecond, busy: false},         // just under
		{covered: 20, span: time.Millisecond, busy: false},         // 20k/s: flushes follow at once
		{covered: 1500, span: 10 * time.Minute, busy: false},       // a burst after a quiet spell
		{covered: 1, span: 0, busy: true},                          // no measurable span
		{covered: 0, span: time.Millisecond, busy: false},          // nothing covered
		{covered: 1999, span: 10 * time.Millisecond, busy: true},   // 200k/s
		{covered: 1999, span: 100 * time.Millisecond, busy: false}, // 20k/s
	} {
		if got := flushBusy(c.covered, c.span); got != c.busy {
			t.Errorf("flushBusy(%d, %v) = %v, want %v", c.covered, c.span, got, c.busy)
		}
	}
}
