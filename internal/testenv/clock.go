package testenv

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when a test advances it. Code whose
// rules depend on time (lease expiry, retention) takes a func() time.Time
// or a clock with a Now method; a test hands it Clock.Now and advances
// past a deadline instead of sleeping through it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock standing at start. Start at time.Now() where
// the code compares the clock with times the system gives it (file
// modification times, for instance).
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
