package netserver

// The write side of a connection: responses leave in the order their
// requests arrived, written by the writer goroutine (writeLoop), which
// sends the small ones that are ready together in one write, or, when
// small and ready with nothing ahead, by the read loop (writeInline).

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

func (c *Conn) writeLoop(done chan<- struct{}) {
	defer close(done)
	failed := false
	var next *Pending // taken from the queue, not ready to join a write
	var batch []*Pending
	for {
		p := next
		next = nil
		if p == nil {
			var ok bool
			if p, ok = <-c.queue; !ok {
				return
			}
		}
		<-p.done
		batch = append(batch[:0], p)
		if size := coalescible(p); size >= 0 {
			batch, next = c.gather(batch, size)
		}
		failed = !c.deliverAll(batch, failed)
		clear(batch) // what was written is not kept alive by the slice
	}
}

// coalesceMax bounds the bytes of the responses one write sends. A client
// that pipelines (every producer does, up to its max in-flight requests)
// gets the answers that are ready together in one write: at acks=all a
// flush completes many requests at once, and one write per answer was one
// syscall, one TCP segment and one wake-up of the client each.
const coalesceMax = 64 << 10

// coalescible returns the size of p's response if it may share a write
// with others (complete, small and already encoded), else -1. Call only
// once p.done is closed.
func coalescible(p *Pending) int {
	if p.panicked != nil {
		return -1
	}
	if p.resp == nil {
		return 0 // acks=0: nothing to write, only to release
	}
	if e, ok := p.resp.(Encoded); ok && len(e) <= inlineMax {
		return len(e)
	}
	return -1
}

// gather adds to batch the responses queued behind it that are ready and
// coalescible, up to coalesceMax bytes, without waiting for any. It
// returns the batch and the first response it took but could not add,
// which the writer handles next.
func (c *Conn) gather(batch []*Pending, size int) ([]*Pending, *Pending) {
	for size < coalesceMax {
		var q *Pending
		select {
		case q = <-c.queue:
		default:
			return batch, nil
		}
		if q == nil {
			return batch, nil // closed: the next receive ends the loop
		}
		select {
		case <-q.done:
		default:
			return batch, q
		}
		n := coalescible(q)
		if n < 0 || size+n > coalesceMax {
			return batch, q
		}
		batch = append(batch, q)
		size += n
	}
	return batch, nil
}

// deliverAll is deliver for responses that share one write.
func (c *Conn) deliverAll(batch []*Pending, failed bool) bool {
	if len(batch) == 1 {
		return c.deliver(batch[0], failed)
	}
	if !failed {
		bp := writeBufs.Get().(*[]byte)
		buf := (*bp)[:0]
		for _, p := range batch {
			if e, ok := p.resp.(Encoded); ok {
				buf = append(buf, e...)
			}
		}
		if len(buf) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.ResponseWriteTimeout))
			if _, err := c.nc.Write(buf); err != nil {
				failed = true
				c.writeFailed(err)
			}
		}
		*bp = buf[:0]
		writeBufs.Put(bp)
	}
	for _, p := range batch {
		c.finish(p)
	}
	return !failed
}

// writeBufs holds the buffers coalesced responses are copied into: a
// connection that pipelines borrows one per write rather than keeping one.
var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, coalesceMax); return &b }}

// inlineMax bounds the responses the read loop writes itself: small enough
// to fit in the socket's send buffer at once, so the write does not hold up
// reading the next request.
const inlineMax = 16 << 10

// writeInline writes a response from the read loop when it is complete and
// nothing is ahead of it, sparing a wake-up of the writer goroutine per
// request (a batch-1 producer pays one per record). Order holds because
// only the read loop queues responses: with none in flight the writer is
// idle and stays so until the next enqueue. It reports whether p was taken
// care of; false leaves p to the writer.
func (c *Conn) writeInline(p *Pending) bool {
	if c.inFlight.Load() != 0 {
		return false
	}
	select {
	case <-p.done: // p's fields are final only from here on
	default:
		return false
	}
	if p.panicked != nil {
		return false
	}
	if e, ok := p.resp.(Encoded); p.resp != nil && (!ok || len(e) > inlineMax) {
		return false
	}
	if hook := inlineWriteHook.Load(); hook != nil {
		(*hook)()
	}
	c.inFlight.Add(1)
	c.deliver(p, c.isGone())
	return true
}

// inlineWriteHook, when set by a test (OnInlineWrite), is called before
// each response the read loop writes itself; nil in production.
var inlineWriteHook atomic.Pointer[func()]

// OnInlineWrite makes fn run before each response a read loop writes
// itself, until restore: for tests of the broker that count them.
func OnInlineWrite(fn func()) (restore func()) {
	inlineWriteHook.Store(&fn)
	return func() { inlineWriteHook.Store(nil) }
}

// deliver writes p's response unless the connection has already failed,
// then releases what p held. It reports whether the connection is still
// usable; after a failure the connection is aborted and later responses are
// only released.
func (c *Conn) deliver(p *Pending, failed bool) bool {
	if p.panicked != nil {
		c.logPanic(p.api, p.panicked)
		// The client waits for an answer that will never come, and
		// answering what follows would break the order: drop it.
		failed = true
		c.abort()
	}
	if !failed && p.resp != nil {
		if err := c.write(p); err != nil {
			failed = true
			c.writeFailed(err)
		}
	}
	c.finish(p)
	return !failed
}

// writeFailed aborts the connection after a failed write: the client went
// away or stopped reading; the rest is drained so handlers finish and
// release what they hold.
func (c *Conn) writeFailed(err error) {
	c.abort()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.logger.Warn("closing connection: client is not reading its responses",
			"timeout", c.s.cfg.ResponseWriteTimeout)
	} else {
		c.logger.Debug("writing response", "err", err)
	}
}

// write writes one response within the write deadline. A panic while
// writing is an error of this connection only.
func (c *Conn) write(p *Pending) (err error) {
	defer func() {
		if v := recover(); v != nil {
			c.logPanic(p.api, &Panic{Value: v, Stack: debug.Stack()})
			err = fmt.Errorf("panic writing a response: %v", v)
		}
	}()
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.ResponseWriteTimeout))
	return p.resp.Send(c.nc)
}

// finish releases what a response held, written or not.
func (c *Conn) finish(p *Pending) {
	if r, ok := p.resp.(Releaser); ok {
		r.Release()
	}
	p.held.release(c.s)
	if p.frame != nil {
		putFrame(p.frame)
		p.frame = nil
	}
	if p.api.known {
		c.s.cfg.Observer.ResponseDone(p.api.key, p.api.version, p.start, !c.isGone() && p.panicked == nil)
	}
	c.inFlight.Add(-1)
}
