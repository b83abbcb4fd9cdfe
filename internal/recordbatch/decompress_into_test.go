package recordbatch

import (
	"bytes"
	"errors"
	"testing"

	"github.com/golang/snappy"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// A raw snappy block that decodes to nothing once made the decompressor
// return neither a reader nor bytes, and the walk dereference the missing
// reader: a batch claiming records and holding an empty block must be
// refused as corrupt, and expanding it must give no bytes, not a panic.
func TestEmptySnappyBlock(t *testing.T) {
	empty := snappy.Encode(nil, nil)
	if _, err := walkCompressed(CodecSnappy, empty, 1, 1<<20, false); !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrCorrupt) {
		t.Errorf("walking one record in an empty block: %v, want it refused", err)
	}
	out, err := DecompressRecords(CodecSnappy, empty, 1<<20)
	if err != nil || len(out) != 0 {
		t.Errorf("DecompressRecords of an empty block = %q, %v; want nothing, no error", out, err)
	}
}

// Every codec decompresses into the room the caller gives, so that a
// reader of many batches reuses one buffer: records that fit (exactly,
// too) stay in it, larger ones come back in a buffer of their own, and
// the limit holds to the byte either way.
func TestDecompressRecordsIntoReusesRoom(t *testing.T) {
	records := bytes.Repeat([]byte("tributary records "), 20_000)
	size := int64(len(records))
	for _, c := range rbtest.Compressors {
		data := rbtest.Compress(c, records)
		limit := size // exactly the records' size: still within it
		if Codec(c.Codec) == CodecZstd {
			// zstd's decoder takes the limit as its memory bound, its
			// window included: too small for this stream's window.
			limit = testLimit
		}
		for _, room := range []int{len(records) + 100, len(records), len(records) / 3, 0} {
			dst := make([]byte, 0, room)
			out, err := DecompressRecordsInto(dst, Codec(c.Codec), data, limit)
			if err != nil || !bytes.Equal(out, records) {
				t.Fatalf("%s into %d bytes of room: %d bytes back, %v", c.Name, room, len(out), err)
			}
			if in := room > 0 && &out[0] == &dst[:1][0]; in != (room >= len(records)) {
				t.Errorf("%s: %d bytes into %d bytes of room: decoded there %v, want %v", c.Name, len(records), room, in, !in)
			}
		}
		if _, err := DecompressRecordsInto(make([]byte, 0, 2*len(records)), Codec(c.Codec), data, size-1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: records one byte over the limit: %v, want ErrCorrupt", c.Name, err)
		}
	}
}
