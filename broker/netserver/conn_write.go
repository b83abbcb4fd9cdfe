package netserver

// The write side of a connection: responses leave in the order their
// requests arrived, written by the writer goroutine (writeLoop) or, when
// small and ready with nothing ahead, by the read loop (writeInline).

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"
)

func (c *Conn) writeLoop(done chan<- struct{}) {
	defer close(done)
	failed := false
	for p := range c.queue {
		<-p.done
		failed = !c.deliver(p, failed)
	}
}

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
			// The client went away or stopped reading; the rest is drained
			// so handlers finish and release what they hold.
			failed = true
			c.abort()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.logger.Warn("closing connection: client is not reading its responses",
					"timeout", c.s.cfg.ResponseWriteTimeout)
			} else {
				c.logger.Debug("writing response", "err", err)
			}
		}
	}
	c.finish(p)
	return !failed
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
