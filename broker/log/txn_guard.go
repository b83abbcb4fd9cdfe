package log

// The verification guard (KIP-890's, made for every client). A partition
// leader appends a producer's transactional batch only once the
// producer's coordinator has said that its transaction is open and holds
// the partition; but the transaction can end between that answer and the
// append: a client that gave up waiting on its produce aborts, and the
// abort marker lands first. Appended after it, the late batch would open
// a transaction here that no coordinator knows of, and the producer's
// next marker would decide it: a commit would then make an aborted
// transaction's records visible. So the leader takes a guard before it
// asks, and the append refuses the batch if a marker for its producer was
// written since.

import (
	"errors"
	"fmt"
)

// ErrTxnEndedMeanwhile: a marker ended the producer's transaction in this
// partition while its batch was being verified (INVALID_TXN_STATE).
var ErrTxnEndedMeanwhile = errors.New("the producer's transaction ended in this partition while its batch was being verified with the coordinator")

// TxnGuard is how many markers a partition had written for a producer
// when the verification of its batch began; the zero value guards
// nothing.
type TxnGuard struct {
	producerID int64
	markers    uint32
	set        bool
}

// GuardTxn takes the guard for producerID's next transactional append.
func (l *Log) GuardTxn(producerID int64) TxnGuard {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return TxnGuard{producerID: producerID, markers: l.markersOf(producerID), set: true}
}

// markersOf counts the markers written for producerID while this log has
// remembered it: one forgotten and met again counts from zero, which a
// guard taken before takes for a change (a refusal the producer retries,
// never a late batch let through). Call with mu held.
func (l *Log) markersOf(producerID int64) uint32 {
	if st := l.producers.lookup(producerID); st != nil {
		return st.markers
	}
	return 0
}

// checkGuard refuses plan if it holds g's producer's transactional
// batches and a marker for that producer was written since g was taken.
// Call with mu held.
func (l *Log) checkGuard(plan []plannedBatch, g TxnGuard) error {
	if !g.set {
		return nil
	}
	for i := range plan {
		h := &plan[i].h
		if h.Transactional() && h.ProducerID == g.producerID {
			if n := l.markersOf(g.producerID); n != g.markers {
				return fmt.Errorf("%w (producer %d, %d markers written since)", ErrTxnEndedMeanwhile, g.producerID, n-g.markers)
			}
			return nil
		}
	}
	return nil
}
