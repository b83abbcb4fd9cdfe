package dataapi

// What Fetch tells of transactions: every partition's last stable offset
// (LSO), the offset below which every transaction is decided; and, to a
// read_committed consumer, which stops there, the aborted transactions
// whose records the returned batches may hold, so the client drops them.

import (
	"github.com/tributary-io/tributary/broker/log"
)

// stableOffset is the LSO to send: an errored partition carries -1 as
// its high watermark does.
func (p *fetchPartition) stableOffset() int64 {
	if p.errorCode != 0 {
		return p.highWatermark
	}
	return p.lastStable
}

// abortedTxns writes the AbortedTransactions array (null when empty).
func (e *fetchEncoder) abortedTxns(aborted []log.AbortedTxn) {
	if len(aborted) == 0 {
		e.nullArray()
		return
	}
	e.arrayLen(len(aborted))
	for _, a := range aborted {
		e.int64(a.ProducerID)
		e.int64(a.FirstOffset)
		if e.flex {
			e.buf = append(e.buf, 0) // tags
		}
	}
}
