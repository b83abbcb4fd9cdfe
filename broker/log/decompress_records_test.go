package log

import (
	"errors"
	"testing"

	"github.com/golang/snappy"
)

// A raw snappy block that decodes to nothing once made the decompressor
// return neither a reader nor bytes, and the walk dereference the missing
// reader: a batch claiming records and holding an empty block must be
// refused as corrupt, and expanding it must give no bytes, not a panic.
func TestEmptySnappyBlock(t *testing.T) {
	empty := snappy.Encode(nil, nil)
	if err := walkCompressed(codecSnappy, empty, 1, 1<<20, false); !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrCorruptBatch) {
		t.Errorf("walking one record in an empty block: %v, want it refused", err)
	}
	out, err := DecompressRecords(codecSnappy, empty, 1<<20)
	if err != nil || len(out) != 0 {
		t.Errorf("DecompressRecords of an empty block = %q, %v; want nothing, no error", out, err)
	}
}
