package netserver

import (
	"sync/atomic"
	"time"
)

// Throttle is a connection's throttle: until when the broker does not read
// its next request.
type Throttle struct {
	mutedUntil atomic.Int64 // unix nanoseconds
}

// Mute stops reading from the connection for d (longer mutes win); a nil
// Throttle (no connection) does nothing.
func (m *Throttle) Mute(d time.Duration) {
	if d <= 0 || m == nil {
		return
	}
	until := time.Now().Add(d).UnixNano()
	for {
		cur := m.mutedUntil.Load()
		if cur >= until || m.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// awaitUnmuted waits out a throttle before the connection's next request
// is read; it ends early when the connection is stopped or dropped.
func (c *Conn) awaitUnmuted() {
	wait := time.Until(time.Unix(0, c.throttle.mutedUntil.Load()))
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.stopped:
	case <-c.gone:
	}
}
