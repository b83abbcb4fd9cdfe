package log

import (
	"fmt"
	"math"
	"time"
)

// Idempotent producers number their batches per partition; the log keeps,
// per producer id, the epoch, the last sequence and the last few batches, so
// that a retried batch is answered with its original offsets instead of
// being written twice, and a gap is refused. Kafka clients keep at most five
// batches in flight, hence five remembered batches.
const producerBatchesKept = 5

type producerBatch struct {
	firstSeq, lastSeq int32
	base, last        int64
}

type producerState struct {
	epoch    int16
	lastSeq  int32
	batches  [producerBatchesKept]producerBatch
	n        int // batches remembered, at most producerBatchesKept
	head     int // where the next batch goes in the ring
	lastSeen time.Time
}

type producers map[int64]*producerState

// addSeq adds n to a sequence number the way Kafka does: sequences wrap
// from MaxInt32 to 0.
func addSeq(seq int32, n int32) int32 {
	return int32((int64(seq) + int64(n)) % (math.MaxInt32 + 1))
}

func batchLastSeq(h *batchHeader) int32 { return addSeq(h.baseSequence, h.recordCount-1) }

// check applies the idempotence rules to a batch from a producer id other
// than -1. It returns the original batch when h repeats one of the last
// batches, or an error when h must be refused.
func (p producers) check(h *batchHeader) (*producerBatch, error) {
	st, ok := p[h.producerID]
	if !ok {
		return nil, nil // a producer we know nothing of (new, or its state expired)
	}
	switch {
	case h.producerEpoch < st.epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d, current epoch is %d",
			ErrInvalidProducerEpoch, h.producerID, h.producerEpoch, st.epoch)
	case h.producerEpoch > st.epoch:
		if h.baseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d",
				ErrOutOfOrderSequence, h.producerID, h.producerEpoch, h.baseSequence)
		}
		return nil, nil
	}
	last := batchLastSeq(h)
	for i := 0; i < st.n; i++ {
		if b := &st.batches[i]; b.firstSeq == h.baseSequence && b.lastSeq == last {
			dup := *b
			return &dup, nil
		}
	}
	if want := addSeq(st.lastSeq, 1); h.baseSequence != want {
		return nil, fmt.Errorf("%w: producer %d epoch %d sent sequence %d, expected %d",
			ErrOutOfOrderSequence, h.producerID, h.producerEpoch, h.baseSequence, want)
	}
	return nil, nil
}

// record remembers an accepted batch written at offsets [base, last].
func (p producers) record(h *batchHeader, base, last int64, now time.Time) {
	st, ok := p[h.producerID]
	if !ok || st.epoch != h.producerEpoch {
		st = &producerState{epoch: h.producerEpoch}
		p[h.producerID] = st
	}
	st.lastSeq = batchLastSeq(h)
	st.batches[st.head] = producerBatch{firstSeq: h.baseSequence, lastSeq: st.lastSeq, base: base, last: last}
	st.head = (st.head + 1) % producerBatchesKept
	st.n = min(st.n+1, producerBatchesKept)
	st.lastSeen = now
}

// expire forgets producers idle since before cutoff and says how many.
func (p producers) expire(cutoff time.Time) int {
	n := 0
	for id, st := range p {
		if st.lastSeen.Before(cutoff) {
			delete(p, id)
			n++
		}
	}
	return n
}
