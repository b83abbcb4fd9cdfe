package mirror

import (
	"sync"
	"sync/atomic"
	"time"
)

// partition is one source partition this process copies, from one claim
// by the group to its release: the next offset expected, which of its
// records the target has acknowledged, and counters for the status. The
// copy loop, the produce callbacks and the status read it concurrently;
// mu guards the offsets, the counters are atomic.
type partition struct {
	source    string
	topic     string
	partition int32
	dstTopic  string // the topic in the target (see Config.Rename)
	// target is the partition number in the target topic, or -1 when
	// records are placed by key hash (partition counts differ).
	target  int32
	targetN int32 // partitions of the target topic

	mu      sync.Mutex
	next    int64 // next offset expected from the source
	acks    ackWindow
	resumed int64 // where the copy resumed, as read from the target
	hwm     int64 // latest high watermark seen, -1 if unknown
	revoked bool  // released by the group: stop copying
	// copiedTo holds, under placement by key hash, the source offset of
	// the newest copy found in each target partition when the copy
	// resumed: a record placed in t at or below copiedTo[t] is there
	// already. Nil with the same partition counts.
	copiedTo map[int32]int64
	// failed is set by a produce callback that saw the target refuse a
	// record: the copy loop stops the partition, waits for what is in
	// flight, and resumes from the target's tail (or, after
	// maxAttempts at the same offset, stops the partition for good).
	failed   error
	failedAt int64 // the lowest offset refused in this round
	failedHi int64 // the highest
	attempts int
	retryAt  time.Time // not resumed before, so that a passing cause can pass
	// careful is the highest offset of the last refused round: records up
	// to it are sent one at a time, so that a poison record is refused
	// alone and the records batched with it get through.
	careful int64
	stopped error // non-nil: this partition no longer copies (a poison record)
	// fenced says that failed came of another process initializing the
	// partition's transactional producer (txn.go): not the record's fault.
	fenced bool
	// w is the partition's transactional writer (txn.go); nil when the
	// mirror copies without transactions.
	w *writer

	copied   atomic.Int64 // records acknowledged by the target
	bytes    atomic.Int64 // their key+value bytes
	skipped  atomic.Int64 // records not copied because they came from the target
	unknown  atomic.Int64 // records copied with a schema id that could not be resolved
	lost     atomic.Int64 // records the source deleted before they were copied
	inflight atomic.Int64 // produced, not yet acknowledged (with transactions: not yet committed or aborted)
	queued   atomic.Int64 // fetches waiting for the writer (transactions only)
}

func newPartition(source, topic string, p int32, start int64) *partition {
	return &partition{
		source: source, topic: topic, partition: p, dstTopic: topic,
		target: -1, next: start, resumed: start, hwm: -1, careful: -1,
		acks: ackWindow{safe: start},
	}
}

// placed reports whether a record at offset placed in target partition t
// is in the target already (placement by key hash after a resume).
func (p *partition) placed(t int32, offset int64) bool {
	last, ok := p.copiedTo[t]
	return ok && offset <= last
}

// ackWindow tracks, for one source partition, the records handed to the
// producer and not yet acknowledged, so that the safe offset (status, lag)
// is always one below which everything is in the target. Acknowledgements can arrive
// out of order when one source partition feeds several target partitions
// (placement by key hash); the window only advances over a contiguous
// acknowledged prefix.
type ackWindow struct {
	base uint64   // sequence number of q[0]
	q    []flight // in production order
	safe int64    // every offset below is in the target (or deliberately skipped)
}

type flight struct {
	offset int64
	done   bool
}

// add registers a record handed to the producer and returns its sequence
// number for ack.
func (w *ackWindow) add(offset int64) uint64 {
	w.q = append(w.q, flight{offset: offset})
	return w.base + uint64(len(w.q)) - 1
}

// ack marks the record with sequence seq acknowledged and advances safe
// over the acknowledged prefix.
func (w *ackWindow) ack(seq uint64) {
	i := seq - w.base
	if seq < w.base || i >= uint64(len(w.q)) {
		return // already acknowledged, or not ours: nothing to do
	}
	w.q[i].done = true
	n := 0
	for n < len(w.q) && w.q[n].done {
		w.safe = w.q[n].offset + 1
		n++
	}
	if n == 0 {
		return
	}
	w.base += uint64(n)
	if n == len(w.q) {
		w.q = w.q[:0] // reuse the array: the common case is "all caught up"
		return
	}
	w.q = w.q[n:]
}

// skip records an offset that is deliberately not copied. It counts as
// done in order with the records around it.
func (w *ackWindow) skip(offset int64) {
	if len(w.q) == 0 {
		w.safe = offset + 1
		return
	}
	w.ack(w.add(offset))
}
