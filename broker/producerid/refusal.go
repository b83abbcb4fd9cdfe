package producerid

// Produce's guard on producer ids: an id remembers the principal it was
// handed to, and a batch with it from another principal is refused.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// Refusal checks the producer ids of a partition's batches: one handed to
// another principal is refused with INVALID_PRODUCER_ID_MAPPING, so a
// client that learnt a producer's id cannot write batches in its name (and
// so have its next real batch acknowledged as a duplicate). Ids this
// broker does not know (handed out before its last start, or by another
// broker) pass: their unguessability is the guard there. Framing errors
// pass too: the append refuses them.
func (p *IDs) Refusal(principal string, records []byte) (int16, string) {
	for len(records) >= recordbatch.HeaderSize {
		h := recordbatch.ParseHeader(records)
		if h.Size() < recordbatch.HeaderSize || h.Size() > int64(len(records)) {
			return 0, ""
		}
		if id := h.ProducerID; id >= 0 {
			if owner, ok := p.OwnerOf(id); ok && owner != principal {
				return kerr.InvalidProducerIDMapping.Code, fmt.Sprintf("producer id %d was handed to another principal than %s", id, principal)
			}
		}
		records = records[h.Size():]
	}
	return 0, ""
}
