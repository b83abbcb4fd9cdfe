// Package budget bounds the bytes a set of concurrent holders may take at
// once: the broker's request budget (queued.max.request.bytes and its
// per-address, per-principal and before-login shares) and the memory that
// re-encoding decompressions hold (internal/recordbatch). A holder acquires
// bytes before it allocates them and releases them once they are free
// again, so a flood of large requests or batches makes its senders wait —
// backpressure on the clients — instead of growing the heap.
//
// What a caller may rely on: acquire takes Clamp(n), never more than the
// capacity, so a request larger than the whole budget waits until it has
// the budget to itself rather than forever; a canceled wait takes nothing.
// Waiters are not served in arrival order: whoever fits in what is free
// goes, so small holders keep flowing while a large one waits for room.
package budget

import "sync"

// Budget is a capacity of bytes shared by concurrent holders.
type Budget struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	peak     int64
	waiting  int           // acquires waiting on wake
	wake     chan struct{} // closed (and replaced) when bytes are released to waiters
}

// New makes a budget of capacity bytes.
func New(capacity int64) *Budget {
	return &Budget{capacity: capacity, wake: make(chan struct{})}
}

// Clamp is what acquiring n really takes: at most the whole budget.
func (b *Budget) Clamp(n int64) int64 { return min(n, b.capacity) }

// Acquire takes Clamp(n) bytes, waiting until they are free. It gives up,
// taking nothing, when either cancel channel is closed (a nil channel
// never is).
func (b *Budget) Acquire(n int64, cancel, cancel2 <-chan struct{}) bool {
	n = b.Clamp(n)
	for {
		b.mu.Lock()
		if b.used+n <= b.capacity {
			b.used += n
			b.peak = max(b.peak, b.used)
			b.mu.Unlock()
			return true
		}
		wake := b.wake
		b.waiting++
		b.mu.Unlock()
		ok := true
		select {
		case <-wake:
		case <-cancel:
			ok = false
		case <-cancel2:
			ok = false
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if !ok {
			return false
		}
	}
}

// Release gives back n bytes taken by Acquire (n as returned by Clamp).
func (b *Budget) Release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	// Only a waiter needs the wake-up: the common case, nobody waiting,
	// costs no channel per release.
	if b.waiting > 0 {
		close(b.wake)
		b.wake = make(chan struct{})
	}
	b.mu.Unlock()
}

// InUse reports the bytes currently held.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak reports the most the budget has held at once.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
