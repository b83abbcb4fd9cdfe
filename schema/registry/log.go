package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
)

// Record is one entry of the registry's log. A nil Value is a tombstone.
type Record struct {
	Offset int64
	Key    []byte
	Value  []byte
}

// Log is the ordered, durable record stream the registry's state is
// rebuilt from: the _schemas topic on the broker (OpenKafkaLog), or memory
// in unit tests (MemoryLog). Every node reads the same records in the same
// order, which is all the agreement between nodes rests on.
type Log interface {
	// Append durably appends recs, in order and together, and returns the
	// offset of the last one.
	Append(ctx context.Context, recs ...Record) (last int64, err error)
	// End returns the offset the next appended record will get: once a
	// reader has seen every record before it, it has seen every write
	// acknowledged so far.
	End(ctx context.Context) (int64, error)
	// Next blocks until there are records after the ones it returned last
	// (starting from the beginning of the log) and returns them in order.
	Next(ctx context.Context) ([]Record, error)
	// Close releases the log's resources; Next then returns an error.
	Close() error
}

// MemoryLog is a Log kept in memory, for tests: one MemoryLog can be opened
// by several registry nodes, each reading it from the start, just as nodes
// share the _schemas topic. It forgets everything when dropped.
type MemoryLog struct {
	id      string // as a topic's id: another MemoryLog is another topic
	mu      sync.Mutex
	recs    []Record
	changed chan struct{} // closed and replaced on every append
}

// NewMemoryLog returns an empty MemoryLog.
func NewMemoryLog() *MemoryLog {
	return &MemoryLog{id: rand.Text(), changed: make(chan struct{})}
}

// Open returns a reader of m positioned at its beginning.
func (m *MemoryLog) Open() Log {
	return &memCursor{m: m, closed: make(chan struct{})}
}

// Records returns a copy of every record appended so far.
func (m *MemoryLog) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.recs...)
}

type memCursor struct {
	m         *MemoryLog
	next      int64
	closeOnce sync.Once
	closed    chan struct{}
}

var errLogClosed = errors.New("registry: log closed")

func (c *memCursor) Append(ctx context.Context, recs ...Record) (int64, error) {
	select {
	case <-c.closed:
		return 0, errLogClosed
	default:
	}
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recs {
		r.Offset = int64(len(m.recs))
		m.recs = append(m.recs, r)
	}
	close(m.changed)
	m.changed = make(chan struct{})
	return int64(len(m.recs)) - 1, nil
}

func (c *memCursor) End(context.Context) (int64, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return int64(len(c.m.recs)), nil
}

func (c *memCursor) Next(ctx context.Context) ([]Record, error) {
	for {
		c.m.mu.Lock()
		n := int64(len(c.m.recs))
		changed := c.m.changed
		if n > c.next {
			out := append([]Record(nil), c.m.recs[c.next:]...)
			c.next = n
			c.m.mu.Unlock()
			return out, nil
		}
		c.m.mu.Unlock()
		select {
		case <-changed:
		case <-c.closed:
			return nil, errLogClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// TopicID tells MemoryLogs apart as a broker tells topics apart.
func (c *memCursor) TopicID(context.Context) (string, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return c.m.id, nil
}

func (c *memCursor) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}
