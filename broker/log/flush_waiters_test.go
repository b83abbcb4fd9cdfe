package log

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gateFS is the OS file system whose segment fsyncs can be held (each
// waits at the gate, saying so on entered, until it opens) and made to
// fail, so a test knows a flush is under way and decides how it ends.
type gateFS struct {
	OSFS
	mu      sync.Mutex
	gate    chan struct{} // nil: open
	err     error         // what segment fsyncs return
	entered chan struct{} // a segment fsync reached the gate
	synced  atomic.Int64  // segment fsyncs that succeeded
}

func newGateFS() *gateFS { return &gateFS{entered: make(chan struct{}, 64)} }

// hold makes the next segment fsyncs wait until the returned function
// opens the gate again.
func (g *gateFS) hold() (open func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gate := make(chan struct{})
	g.gate = gate
	return sync.OnceFunc(func() {
		g.mu.Lock()
		g.gate = nil
		g.mu.Unlock()
		close(gate)
	})
}

func (g *gateFS) failWith(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.err = err
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := g.OSFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return gateFile{f, g}, nil
}

type gateFile struct {
	File
	g *gateFS
}

func (f gateFile) Sync() error {
	f.g.mu.Lock()
	gate := f.g.gate
	f.g.mu.Unlock()
	if gate != nil {
		f.g.entered <- struct{}{}
		<-gate
	}
	f.g.mu.Lock()
	err := f.g.err
	f.g.mu.Unlock()
	if err != nil {
		return err
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.g.synced.Add(1)
	return nil
}

// waitEntered waits until a segment fsync is held at g's gate.
func waitEntered(t *testing.T, g *gateFS) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no flush reached the fsync")
	}
}

// answers collects WhenFlushed's calls.
type answers struct {
	mu      sync.Mutex
	offsets []int64
	errs    []error
	synced  []int64 // segment fsyncs done when each was called
	calls   chan struct{}
}

func newAnswers() *answers { return &answers{calls: make(chan struct{}, 1024)} }

func (a *answers) waiter(g *gateFS, offset int64) func(error) {
	return func(err error) {
		a.mu.Lock()
		a.offsets = append(a.offsets, offset)
		a.errs = append(a.errs, err)
		a.synced = append(a.synced, g.synced.Load())
		a.mu.Unlock()
		a.calls <- struct{}{}
	}
}

// await waits for n more calls.
func (a *answers) await(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-a.calls:
		case <-time.After(30 * time.Second):
			t.Fatalf("waiters not answered: %d answers so far", len(a.calls))
		}
	}
}

func (a *answers) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.offsets)
}

func waitersLeft(l *Log) int {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	return len(l.waiters)
}

func TestFlushAnswersItsWaitersInOffsetOrderAfterTheFsync(t *testing.T) {
	g := newGateFS()
	cfg := testConfig()
	cfg.FS = g
	l, _ := openLog(t, t.TempDir(), cfg)
	var lasts []int64
	for range 5 {
		lasts = append(lasts, mustAppend(t, l, makeBatch(batchOpts{records: 3})).LastOffset)
	}
	open := g.hold()
	defer open()
	a := newAnswers()
	before := runtime.NumGoroutine()
	// Registered out of order, as requests of several connections may be.
	for _, i := range []int{3, 0, 4, 1, 2} {
		l.WhenFlushed(context.Background(), lasts[i], a.waiter(g, lasts[i]))
	}
	waitEntered(t, g)
	if n := a.count(); n != 0 {
		t.Fatalf("%d waiters answered while their fsync was held", n)
	}
	// A waiter is a callback: waiting costs no goroutine.
	if now := runtime.NumGoroutine(); now > before+1 {
		t.Fatalf("goroutines went from %d to %d for 5 waiters", before, now)
	}
	open()
	a.await(t, 5)
	for i, off := range a.offsets {
		if a.errs[i] != nil {
			t.Fatalf("waiter at %d: %v", off, a.errs[i])
		}
		if a.synced[i] == 0 {
			t.Fatalf("waiter at %d answered before any segment fsync", off)
		}
		if i > 0 && off < a.offsets[i-1] {
			t.Fatalf("answered in order %v, want offset order", a.offsets)
		}
		if hw := l.HighWatermark(); hw <= off {
			t.Fatalf("waiter at %d answered with the high watermark at %d", off, hw)
		}
	}
	if n := waitersLeft(l); n != 0 {
		t.Fatalf("%d waiters left after the flush", n)
	}
	// Already flushed: answered at once, on the caller's goroutine.
	var err error = errors.New("not called")
	l.WhenFlushed(context.Background(), lasts[0], func(e error) { err = e })
	if err != nil {
		t.Fatalf("waiter on a flushed offset: %v", err)
	}
}

func TestFlushWaiterWhoseContextEndsIsDropped(t *testing.T) {
	g := newGateFS()
	cfg := testConfig()
	cfg.FS = g
	l, _ := openLog(t, t.TempDir(), cfg)
	last := mustAppend(t, l, makeBatch(batchOpts{records: 2})).LastOffset
	open := g.hold()
	defer open()
	a := newAnswers()
	ctx, cancel := context.WithCancel(context.Background())
	l.WhenFlushed(ctx, last, a.waiter(g, last))
	l.WhenFlushed(context.Background(), last, a.waiter(g, last))
	waitEntered(t, g)
	cancel()
	a.await(t, 1)
	if !errors.Is(a.errs[0], context.Canceled) {
		t.Fatalf("waiter whose context ended: %v", a.errs[0])
	}
	if n := waitersLeft(l); n != 1 {
		t.Fatalf("%d waiters left, want the other one only", n)
	}
	open()
	a.await(t, 1)
	if a.errs[1] != nil {
		t.Fatalf("the other waiter: %v", a.errs[1])
	}
	mustFlush(t, l) // a flush after: nothing is answered twice
	if n := a.count(); n != 2 {
		t.Fatalf("%d answers for 2 waiters", n)
	}
	// A context already ended is answered at once, and nothing is kept.
	l.WhenFlushed(ctx, last+100, a.waiter(g, last+100))
	if n := a.count(); n != 3 || !errors.Is(a.errs[2], context.Canceled) {
		t.Fatalf("waiter with an ended context: %d answers, last %v", n, a.errs[n-1])
	}
	if n := waitersLeft(l); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}

func TestFailedFsyncFailsEveryWaiter(t *testing.T) {
	g := newGateFS()
	cfg := testConfig()
	cfg.FS = g
	l, _ := openLog(t, t.TempDir(), cfg)
	first := mustAppend(t, l, makeBatch(batchOpts{records: 2})).LastOffset
	open := g.hold()
	defer open()
	a := newAnswers()
	l.WhenFlushed(context.Background(), first, a.waiter(g, first))
	waitEntered(t, g)
	// Appended while the flush is under way: not covered by it, still failed.
	second := mustAppend(t, l, makeBatch(batchOpts{records: 2})).LastOffset
	l.WhenFlushed(context.Background(), second, a.waiter(g, second))
	injected := errors.New("injected: I/O error")
	g.failWith(injected)
	open()
	a.await(t, 2)
	for i, err := range a.errs {
		if !errors.Is(err, injected) {
			t.Fatalf("waiter at %d: %v, want the fsync's error", a.offsets[i], err)
		}
	}
	if hw := l.HighWatermark(); hw > first {
		t.Fatalf("high watermark %d after a failed fsync of offset %d", hw, first)
	}
	if n := waitersLeft(l); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
	l.WhenFlushed(context.Background(), second, a.waiter(g, second))
	if n := a.count(); n != 3 || !errors.Is(a.errs[2], injected) {
		t.Fatalf("waiter on a failed log: %d answers, last %v", n, a.errs[n-1])
	}
}

func TestCloseAnswersTheWaitersItsFlushCovers(t *testing.T) {
	g := newGateFS()
	cfg := testConfig()
	cfg.FS = g
	l, _ := openLog(t, t.TempDir(), cfg)
	last := mustAppend(t, l, makeBatch(batchOpts{records: 2})).LastOffset
	open := g.hold()
	defer open()
	a := newAnswers()
	l.WhenFlushed(context.Background(), last, a.waiter(g, last))
	l.WhenFlushed(context.Background(), last+10, a.waiter(g, last+10)) // never appended
	waitEntered(t, g)
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	open()
	a.await(t, 2)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for i, off := range a.offsets {
		switch {
		case off == last && a.errs[i] != nil:
			t.Fatalf("waiter covered by the last flush: %v", a.errs[i])
		case off != last && !errors.Is(a.errs[i], ErrClosed):
			t.Fatalf("waiter past the log end at Close: %v, want ErrClosed", a.errs[i])
		}
	}
}

func TestWaitFlushedWhoseContextEndsLeavesNoWaiter(t *testing.T) {
	g := newGateFS()
	cfg := testConfig()
	cfg.FS = g
	l, _ := openLog(t, t.TempDir(), cfg)
	last := mustAppend(t, l, makeBatch(batchOpts{records: 2})).LastOffset
	open := g.hold()
	defer open()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- l.WaitFlushed(ctx, last) }()
	waitEntered(t, g)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFlushed whose context ended: %v", err)
	}
	if n := waitersLeft(l); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
	open()
	if err := l.WaitFlushed(context.Background(), last); err != nil {
		t.Fatal(err)
	}
}
