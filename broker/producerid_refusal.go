package broker

// Produce's guard on producer ids (broker/producerid hands them out): an
// id remembers the principal it was handed to, and a batch with it from
// another principal is refused.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// producerIDRefusal checks the producer ids of a partition's batches: one
// handed to another principal is refused with INVALID_PRODUCER_ID_MAPPING,
// so a client that learnt a producer's id cannot write batches in its name
// (and so have its next real batch acknowledged as a duplicate). Ids this
// broker does not know (handed out before its last start, or by another
// broker) pass: their unguessability is the guard there.
func (b *Broker) producerIDRefusal(principal string, records []byte) (int16, string) {
	for len(records) >= recordbatch.HeaderSize {
		h := recordbatch.ParseHeader(records)
		if h.Size() < recordbatch.HeaderSize || h.Size() > int64(len(records)) {
			return 0, "" // appendBatches refuses the framing
		}
		if id := h.ProducerID; id >= 0 {
			if owner, ok := b.pids.OwnerOf(id); ok && owner != principal {
				return kerr.InvalidProducerIDMapping.Code, fmt.Sprintf("producer id %d was handed to another principal than %s", id, principal)
			}
		}
		records = records[h.Size():]
	}
	return 0, ""
}
