package log

import (
	"context"
	"slices"
)

// Flush waiters: acks=all requests answered by the flush that covers them.
//
// A waiter is a callback, not a goroutine: the flush that moves the high
// watermark past a waiter's offset takes it out of the log's list and calls
// it, in offset order, once the fsync is done and the log's lock is let go.
// Before this, every acks=all request had a goroutine of its own that slept
// on the log's Changed channel; each flush woke all of them (those it did
// not cover went back to sleep) and the scheduler had to run them all
// before their answers could be written: under load a profile showed more
// such goroutines created and not yet run than asleep. A waiter costs no
// wake-up but its callback's.
//
// Every waiter is called exactly once: with nil when a flush covers it,
// with the log's error when it fails (a failed fsync fails every waiter,
// since nothing says which of its bytes reached the disk), with ErrClosed
// when it closes, or with its context's error, whichever comes first. The
// list is the arbiter: whoever takes a waiter out of it (under waitMu)
// calls it.

// flushWaiter is one caller of WhenFlushed.
type flushWaiter struct {
	offset int64
	done   func(error)
	stop   func() bool // ends the watch of the caller's context; nil: the caller watches
	err    error       // what done is called with, once decided
}

// WhenFlushed calls done once the high watermark is above offset (nil):
// the batch ending at offset is fsynced and visible. It calls done with the
// log's failure if it fails, ErrClosed if it closes, or ctx's error if ctx
// ends first; done is called exactly once. A flush is asked for at once.
//
// done runs on the goroutine that decided it: the log's flush goroutine
// (after the fsync, without the log's locks), ctx's, or the caller's when
// the answer is known already. It must not block: it is meant to hand the
// result on (answer a request), so that a flush answers every request it
// covers without a goroutine per request.
func (l *Log) WhenFlushed(ctx context.Context, offset int64, done func(error)) {
	if _, decided, err := l.addWaiter(ctx, offset, done, true); decided {
		done(err)
	}
}

// WaitFlushed waits until the high watermark is above offset (acks=all).
// Concurrent waiters share fsyncs: one flush covers every batch appended
// before it started. It returns ErrClosed if the log closes first, the
// log's failure if a flush fails, or ctx's error.
func (l *Log) WaitFlushed(ctx context.Context, offset int64) error {
	ch := make(chan error, 1)
	w, decided, err := l.addWaiter(ctx, offset, func(err error) { ch <- err }, false)
	if decided {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		if l.dropWaiter(w) {
			return ctx.Err()
		}
		return <-ch // a flush took it first and answers
	}
}

// addWaiter puts a waiter for offset in the list, or, when the log's
// state answers it already, returns that answer with decided set. With
// watch, ctx's end takes the waiter out and answers it; without, the
// caller watches ctx (and calls dropWaiter).
func (l *Log) addWaiter(ctx context.Context, offset int64, done func(error), watch bool) (w *flushWaiter, decided bool, err error) {
	// The read lock keeps the high watermark, the failure and closed as
	// they are (a flush changes them under the write lock, and takes the
	// waiters they answer then), without holding off the reads and other
	// waiters the write lock would; waitMu orders the list itself.
	l.mu.RLock()
	defer l.mu.RUnlock()
	switch {
	case l.hw > offset:
		return nil, true, nil
	case l.failed != nil:
		return nil, true, l.failed
	case l.closed:
		return nil, true, ErrClosed
	case ctx.Err() != nil:
		return nil, true, ctx.Err()
	}
	w = &flushWaiter{offset: offset, done: done}
	l.waitMu.Lock()
	if watch {
		// Set before w is in the list, so whoever takes w out sees it; a
		// ctx ending meanwhile finds w in the list, as dropWaiter waits
		// for waitMu.
		w.stop = context.AfterFunc(ctx, func() {
			if l.dropWaiter(w) {
				done(ctx.Err())
			}
		})
	}
	i := len(l.waiters) // appends come in offset order: insert from the end
	for i > 0 && l.waiters[i-1].offset > offset {
		i--
	}
	l.waiters = slices.Insert(l.waiters, i, w)
	l.waitMu.Unlock()
	signal(l.flushReq)
	return w, false, nil
}

// waiting is how many WhenFlushed and WaitFlushed callers wait.
func (l *Log) waiting() int {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	return len(l.waiters)
}

// dropWaiter takes w out of the list, reporting whether it was there (and
// so whether the caller is the one to call it).
func (l *Log) dropWaiter(w *flushWaiter) bool {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	i := slices.Index(l.waiters, w)
	if i < 0 {
		return false
	}
	l.waiters = slices.Delete(l.waiters, i, i+1)
	return true
}

// decidedWaiters takes out of the list, in offset order, the waiters the
// log's state now answers: those the high watermark passed, and the rest
// too once the log failed or closed. Call with mu held; call the result's
// callbacks (runWaiters) without it.
func (l *Log) decidedWaiters() []*flushWaiter {
	l.waitMu.Lock() // a waiter whose context ends drops itself under waitMu alone
	defer l.waitMu.Unlock()
	covered, _ := slices.BinarySearchFunc(l.waiters, l.hw, func(w *flushWaiter, hw int64) int {
		if w.offset < hw {
			return -1
		}
		return 1
	})
	var err error
	switch {
	case l.failed != nil:
		err = l.failed
	case l.closed:
		err = ErrClosed
	}
	n := covered
	if err != nil {
		n = len(l.waiters)
	}
	if n == 0 {
		return nil
	}
	ws := slices.Clone(l.waiters[:n])
	rest := copy(l.waiters, l.waiters[n:])
	clear(l.waiters[rest:])
	l.waiters = l.waiters[:rest]
	for _, w := range ws[covered:] {
		w.err = err
	}
	return ws
}

// runWaiters calls decided waiters, in order. A waiter whose context ended
// meanwhile finds itself out of the list and leaves the call to us.
func runWaiters(ws []*flushWaiter) {
	for _, w := range ws {
		if w.stop != nil {
			w.stop()
		}
		w.done(w.err)
	}
}
