package log

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// Idempotent producers number their batches per partition; the log keeps,
// per producer id, the epoch and the last few batches (sequence range and
// offsets), so that a retried batch is answered with its original offsets
// instead of being written twice, and a gap is refused. Kafka clients keep
// at most five batches in flight, hence five remembered batches.
const producerBatchesKept = 5

// producerBatch is a batch as check reports it: its sequence range and the
// offsets it was written at.
type producerBatch struct {
	firstSeq, lastSeq int32
	base, last        int64
}

// seqRange is a remembered batch, kept compact (16 bytes) because a
// partition may track tens of thousands of producers: a batch of n records
// holds n consecutive sequences at n consecutive offsets, so the first
// sequence, the base offset and n describe it whole.
type seqRange struct {
	firstSeq int32
	count    int32
	base     int64
}

func (r seqRange) lastSeq() int32 { return addSeq(r.firstSeq, r.count-1) }
func (r seqRange) last() int64    { return r.base + int64(r.count) - 1 }

// producerEntry is one producer's state. Entries live in one slice and are
// chained, least recently appended first, by index: no pointer per
// producer for the garbage collector to trace and no allocation per new id.
type producerEntry struct {
	id         int64
	lastSeen   int64                         // Clock time of the last append, ms
	batches    [producerBatchesKept]seqRange // a ring; batches[head-1] is the newest
	prev, next int32                         // neighbours in recency order, -1 at the ends
	coordEpoch int32                         // highest transaction coordinator epoch of a marker (txn.go), kept in snapshots
	markers    uint32                        // markers written, for the verification guard (txn_guard.go), in memory only
	epoch      int16
	n, head    uint8 // batches remembered; where the next one goes
}

func (e *producerEntry) newest() seqRange {
	return e.batches[(int(e.head)+producerBatchesKept-1)%producerBatchesKept]
}

// push remembers a batch, forgetting the oldest of five.
func (e *producerEntry) push(r seqRange) {
	e.batches[e.head] = r
	e.head = uint8((int(e.head) + 1) % producerBatchesKept)
	e.n = min(e.n+1, producerBatchesKept)
}

// producers is a partition's table of idempotent producers. It holds at
// most max ids: any client can put a made-up producer id on a batch, so an
// unbounded table would let one client exhaust the broker's memory. Past
// the bound the least recently appended producer is forgotten; its next
// batch is taken as a new producer's, exactly as after expiry.
//
// The zero value is an empty table with DefaultMaxProducerIDs.
type producers struct {
	max     int
	index   map[int64]int32 // producer id → position in entries
	entries []producerEntry
	oldest  int32 // least recently appended, -1 when empty
	newest  int32
	peak    int // most entries since the index was last rebuilt

	evicted int64        // producers forgotten because of the bound
	logger  *slog.Logger // told once, at the first eviction
	dir     string
}

func newProducers(max int, logger *slog.Logger, dir string) producers {
	return producers{max: max, logger: logger, dir: dir}
}

// len is the number of producers tracked.
func (p *producers) len() int { return len(p.entries) }

// addSeq adds n to a sequence number the way Kafka does: sequences wrap
// from MaxInt32 to 0.
func addSeq(seq int32, n int32) int32 {
	return int32((int64(seq) + int64(n)) % (math.MaxInt32 + 1))
}

func batchLastSeq(h *recordbatch.Header) int32 { return addSeq(h.BaseSequence, h.RecordCount-1) }

func (p *producers) lookup(id int64) *producerEntry {
	i, ok := p.index[id]
	if !ok {
		return nil
	}
	return &p.entries[i]
}

// check applies the idempotence rules to a batch from a producer id other
// than -1. It returns the original batch when h repeats one of the last
// batches, or an error when h must be refused.
func (p *producers) check(h *recordbatch.Header) (*producerBatch, error) {
	st := p.lookup(h.ProducerID)
	if st == nil {
		return nil, nil // a producer we know nothing of (new, expired or evicted)
	}
	switch {
	case h.ProducerEpoch < st.epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d, current epoch is %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, st.epoch)
	case h.ProducerEpoch > st.epoch:
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d",
				ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil, nil
	}
	last := batchLastSeq(h)
	for i := 0; i < int(st.n); i++ {
		if b := st.batches[i]; b.firstSeq == h.BaseSequence && b.lastSeq() == last {
			return &producerBatch{firstSeq: b.firstSeq, lastSeq: last, base: b.base, last: b.last()}, nil
		}
	}
	if want := addSeq(st.newest().lastSeq(), 1); h.BaseSequence != want {
		return nil, fmt.Errorf("%w: producer %d epoch %d sent sequence %d, expected %d",
			ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, want)
	}
	return nil, nil
}

// record remembers an accepted batch written at offsets [base, last].
func (p *producers) record(h *recordbatch.Header, base, last int64, now time.Time) {
	st := p.lookup(h.ProducerID)
	if st == nil {
		st = p.insert(h.ProducerID)
	} else {
		p.touch(p.index[h.ProducerID])
	}
	if st.epoch != h.ProducerEpoch {
		st.epoch, st.n, st.head = h.ProducerEpoch, 0, 0
	}
	st.push(seqRange{firstSeq: h.BaseSequence, count: int32(last - base + 1), base: base})
	st.lastSeen = now.UnixMilli()
}

// insert adds a producer as the most recent one, first forgetting the
// least recent when the table is full.
func (p *producers) insert(id int64) *producerEntry {
	if p.max <= 0 {
		p.max = DefaultMaxProducerIDs
	}
	if p.index == nil {
		p.index = map[int64]int32{}
		p.oldest, p.newest = -1, -1
	}
	if len(p.entries) >= p.max {
		p.evictOldest()
	}
	if len(p.entries) == cap(p.entries) {
		// Grow by doubling but never past the bound, so a full table holds
		// exactly max entries' worth of memory.
		grown := make([]producerEntry, len(p.entries), min(max(2*cap(p.entries), 16), p.max))
		copy(grown, p.entries)
		p.entries = grown
	}
	i := int32(len(p.entries))
	p.entries = append(p.entries, producerEntry{id: id, prev: p.newest, next: -1})
	p.linkNewest(i)
	p.index[id] = i
	p.peak = max(p.peak, len(p.entries))
	return &p.entries[i]
}

func (p *producers) evictOldest() {
	victim := p.entries[p.oldest].id
	p.remove(p.oldest)
	p.evicted++
	if p.evicted == 1 && p.logger != nil {
		p.logger.Warn("partition tracks the most idempotent producer ids it may: forgetting the least recently active ones; "+
			"a forgotten producer's retries are no longer deduplicated (raise the bound if these producers are real)",
			"dir", p.dir, "max_producer_ids", p.max, "first_forgotten", victim)
	}
}

// linkNewest puts entry i, not linked, at the recent end of the chain.
func (p *producers) linkNewest(i int32) {
	e := &p.entries[i]
	e.prev, e.next = p.newest, -1
	if p.newest >= 0 {
		p.entries[p.newest].next = i
	} else {
		p.oldest = i
	}
	p.newest = i
}

func (p *producers) unlink(i int32) {
	e := &p.entries[i]
	if e.prev >= 0 {
		p.entries[e.prev].next = e.next
	} else {
		p.oldest = e.next
	}
	if e.next >= 0 {
		p.entries[e.next].prev = e.prev
	} else {
		p.newest = e.prev
	}
}

// touch makes entry i the most recently appended.
func (p *producers) touch(i int32) {
	if i == p.newest {
		return
	}
	p.unlink(i)
	p.linkNewest(i)
}

// remove forgets entry i, moving the last entry into its place so the
// slice stays dense.
func (p *producers) remove(i int32) {
	p.unlink(i)
	delete(p.index, p.entries[i].id)
	last := int32(len(p.entries) - 1)
	if i != last {
		moved := p.entries[last]
		p.entries[i] = moved
		p.index[moved.id] = i
		if moved.prev >= 0 {
			p.entries[moved.prev].next = i
		} else {
			p.oldest = i
		}
		if moved.next >= 0 {
			p.entries[moved.next].prev = i
		} else {
			p.newest = i
		}
	}
	p.entries[last] = producerEntry{}
	p.entries = p.entries[:last]
}

// expire forgets producers idle since before cutoff and says how many.
func (p *producers) expire(cutoff time.Time) int {
	limit, n := cutoff.UnixMilli(), 0
	// Backwards, so the entry remove moves into a hole was already seen.
	for i := len(p.entries) - 1; i >= 0; i-- {
		if p.entries[i].lastSeen < limit {
			p.remove(int32(i))
			n++
		}
	}
	p.shrink()
	return n
}

// shrink gives memory back after many producers went away: Go maps never
// shrink, so a table that once held many ids is rebuilt at its new size.
func (p *producers) shrink() {
	if p.peak < 1024 || len(p.entries) > p.peak/4 {
		return
	}
	entries := make([]producerEntry, len(p.entries), max(len(p.entries), 16))
	copy(entries, p.entries)
	index := make(map[int64]int32, len(entries))
	for i := range entries {
		index[entries[i].id] = int32(i)
	}
	p.entries, p.index, p.peak = entries, index, len(entries)
}

// each visits the producers, least recently appended first.
func (p *producers) each(visit func(e *producerEntry)) {
	if p.index == nil {
		return
	}
	for i := p.oldest; i >= 0; i = p.entries[i].next {
		visit(&p.entries[i])
	}
}
