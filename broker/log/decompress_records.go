package log

import (
	"bytes"
	"fmt"

	"github.com/golang/snappy"
)

// DecompressRecords returns the records of a batch compressed with codec
// (the low three bits of its attributes), decompressed into a new slice of
// at most limit bytes. It is exported for Tributary's readers of fetched
// batches (the loader), so that they expand batches with the same bounded,
// pooled decoders the broker checks them with instead of a second set.
// Errors wrap ErrCorruptBatch.
func DecompressRecords(codec int, data []byte, limit int64) ([]byte, error) {
	return DecompressRecordsInto(nil, codec, data, limit)
}

// DecompressRecordsInto is DecompressRecords decoding into dst's capacity
// when the records fit there (the loader reuses buffers that way); only
// raw snappy, whose decoded size is known first, does so today.
func DecompressRecordsInto(dst []byte, codec int, data []byte, limit int64) ([]byte, error) {
	if codec == codecSnappy && !bytes.HasPrefix(data, xerialMagic) {
		// One raw block (what Kafka's clients send): decoded straight
		// into the slice returned, not into a pooled one then copied.
		size, err := snappy.DecodedLen(data)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy: %v", ErrCorruptBatch, err)
		}
		if int64(size) > limit {
			return nil, fmt.Errorf("%w: snappy block says it decompresses to %d bytes, more than the limit of %d",
				ErrCorruptBatch, size, limit)
		}
		if cap(dst) < size {
			dst = make([]byte, size)
		}
		out, err := snappy.Decode(dst[:size], data)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy: %v", ErrCorruptBatch, err)
		}
		return out, nil
	}
	return decompressAll(codec, data, limit)
}
