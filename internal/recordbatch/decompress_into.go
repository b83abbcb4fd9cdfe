package recordbatch

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"
)

// DecompressRecords returns the records of a batch compressed with codec
// (the low three bits of its attributes), decompressed into a new slice of
// at most limit bytes. It is exported for Tributary's readers of fetched
// batches (the loader), so that they expand batches with the same bounded,
// pooled decoders the broker checks them with instead of a second set.
// Errors wrap ErrCorrupt.
func DecompressRecords(codec Codec, data []byte, limit int64) ([]byte, error) {
	return DecompressRecordsInto(nil, codec, data, limit)
}

// DecompressRecordsInto is DecompressRecords decoding into dst's capacity
// when the records fit there (the loader reuses buffers that way): raw
// snappy, whose decoded size is known first, is decoded there in one
// call; the other codecs stream from their pooled decoders into it, and
// into a buffer of their own only once it is full.
func DecompressRecordsInto(dst []byte, codec Codec, data []byte, limit int64) ([]byte, error) {
	if codec == CodecSnappy && !bytes.HasPrefix(data, xerialMagic) {
		// One raw block (what Kafka's clients send): decoded straight
		// into the slice returned, not into a pooled one then copied.
		size, err := snappy.DecodedLen(data)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
		}
		if int64(size) > limit {
			return nil, fmt.Errorf("%w: snappy block says it decompresses to %d bytes, more than the limit of %d",
				ErrCorrupt, size, limit)
		}
		if cap(dst) < size {
			dst = make([]byte, size)
		}
		out, err := snappy.Decode(dst[:size], data)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
		}
		return out, nil
	}
	src, whole, release, err := decompressor(codec, data, limit)
	if err != nil {
		return nil, err
	}
	defer release()
	if whole != nil {
		return append(dst[:0], whole...), nil
	}
	out, err := readInto(dst[:0], src, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: decompressing %s records: %v", ErrCorrupt, codec.name(), err)
	}
	return out, nil
}

// errOverLimit is readInto's: the records decompress past the limit.
var errOverLimit = errors.New("records decompress to more than the limit")

// readInto appends what src yields to dst, in dst's capacity while it
// lasts, and fails once more than limit bytes came: io.ReadAll without a
// fresh buffer per call.
func readInto(dst []byte, src io.Reader, limit int64) ([]byte, error) {
	if cap(dst) == 0 {
		dst = make([]byte, 0, 512) // io.ReadAll's first size
	}
	for {
		var n int
		var err error
		if len(dst) < cap(dst) {
			n, err = src.Read(dst[len(dst):cap(dst)])
			dst = dst[:len(dst)+n]
		} else {
			// Full: records that fill dst exactly stay in it, so the
			// byte that would make it grow is read on its own.
			var one [1]byte
			if n, err = src.Read(one[:]); n > 0 {
				dst = append(dst, one[0])
			}
		}
		if int64(len(dst)) > limit {
			return nil, fmt.Errorf("%w of %d bytes", errOverLimit, limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
