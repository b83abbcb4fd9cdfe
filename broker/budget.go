package broker

import "sync"

// byteBudget bounds the bytes that requests in flight may hold across the
// broker (queued.max.request.bytes). A connection acquires a request's size
// before it reads the body and gives it back once the response is written,
// so a flood of large requests makes connections wait — backpressure on the
// clients — instead of growing the heap.
//
// Waiters are not served in arrival order: whoever fits in what is free
// goes, so small requests keep flowing while a large one waits for room.
type byteBudget struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	waiting  int           // acquires waiting on wake
	wake     chan struct{} // closed (and replaced) when bytes are released to waiters
}

func newByteBudget(capacity int64) *byteBudget {
	return &byteBudget{capacity: capacity, wake: make(chan struct{})}
}

// clamp is what acquiring n really takes: a request larger than the whole
// budget waits until it has the budget to itself rather than forever.
func (b *byteBudget) clamp(n int64) int64 { return min(n, b.capacity) }

// acquire takes clamp(n) bytes, waiting until they are free. It gives up,
// taking nothing, when either cancel channel is closed.
func (b *byteBudget) acquire(n int64, cancel, cancel2 <-chan struct{}) bool {
	n = b.clamp(n)
	for {
		b.mu.Lock()
		if b.used+n <= b.capacity {
			b.used += n
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

// release gives back n bytes taken by acquire (n as returned by clamp).
func (b *byteBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	// Only a waiter needs the wake-up: the common case, nobody waiting,
	// costs no channel per request.
	if b.waiting > 0 {
		close(b.wake)
		b.wake = make(chan struct{})
	}
	b.mu.Unlock()
}

// inUse reports the bytes currently held.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
