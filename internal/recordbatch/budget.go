package recordbatch

// A broker-wide bound on the memory that re-encoding takes. A topic whose
// compression.type names a codec decompresses each batch whole before
// compressing it again; MaxDecompressedBytes bounds one batch (64 MiB), but
// nothing bounded how many run at once, and 40 concurrent 2 KB bombs on a
// gzip topic took the broker past 5 GB. Now the records being decompressed
// for re-encoding hold bytes of a MemoryBudget shared by every log
// (broker/log's Config.DecompressMemory): a batch starts with a small grant and, if its
// records grow past it, gives that back and waits, holding no grant, for
// room for the full MaxDecompressedBytes. So at most a budget's worth of
// large batches decompress at once, the rest wait (the producer sees a
// slower acknowledgement, never a failure), and no set of waiters can
// deadlock on grants they each hold.

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/tributary-io/tributary/internal/budget"
)

// smallDecompressGrant is what a batch takes first: ordinary batches
// (a producer's 1 MiB of records) fit in it and never wait.
const smallDecompressGrant = 1 << 20

// MemoryBudget bounds the bytes held by decompressions across logs: the
// broker's one byte budget (internal/budget), named here for the format's
// callers.
type MemoryBudget = budget.Budget

// NewMemoryBudget makes a budget of capacity bytes.
func NewMemoryBudget(capacity int64) *MemoryBudget { return budget.New(capacity) }

// ErrCanceled is DecompressBudgeted's when cancel closed while it waited
// for room.
var ErrCanceled = errors.New("waiting for decompression memory: canceled")

// DecompressBudgeted is DecompressAll under the budget m (none: the limit
// alone); it waits for room until cancel is closed (ErrCanceled). release
// gives back what the records hold once they are no longer needed.
func DecompressBudgeted(m *MemoryBudget, codec Codec, data []byte, limit int64, cancel <-chan struct{}) (records []byte, release func(), err error) {
	if m == nil {
		records, err = DecompressAll(codec, data, limit)
		return records, func() {}, err
	}
	grant, large := min(smallDecompressGrant, limit), limit
	var declared int64 // a zstd frame's content size, to size the output once
	if codec == CodecZstd {
		// A zstd decoder sizes its history by what the frame declares,
		// at the first read, and keeps it beside the output: a frame
		// declaring more than the small grant waits for both before any
		// decoder memory is taken.
		var zh zstd.Header
		if zh.Decode(data) == nil {
			if zh.HasFCS && zh.FrameContentSize <= uint64(limit) {
				declared = int64(zh.FrameContentSize)
			}
			if window := min(max(zh.FrameContentSize, zh.WindowSize), uint64(limit)); window > uint64(grant) {
				large += int64(window)
				grant = large
			}
		}
	}
	held := m.Clamp(grant)
	if !m.Acquire(held, cancel, nil) {
		return nil, nil, ErrCanceled
	}
	releaseHeld := func() { m.Release(held) }
	src, whole, put, err := decompressor(codec, data, limit)
	if err != nil {
		releaseHeld()
		return nil, nil, err
	}
	defer put()
	if whole != nil { // raw snappy: decoded whole, within limit, by decompressor
		if int64(len(whole)) > held {
			m.Release(held)
			if held = m.Clamp(int64(len(whole))); !m.Acquire(held, cancel, nil) {
				return nil, nil, ErrCanceled
			}
		}
		return bytes.Clone(whole), releaseHeld, nil
	}
	var buf bytes.Buffer
	buf.Grow(int(declared) + bytes.MinRead) // no doubling past what the frame says (ReadFrom wants MinRead spare)
	first := held
	if held >= limit {
		first = limit + 1 // one byte more tells a batch over the limit
	}
	if _, err = io.Copy(&buf, io.LimitReader(src, first)); err == nil && int64(buf.Len()) == held && held < limit {
		// Larger than the small grant: wait for room for the largest
		// batch allowed, holding nothing meanwhile.
		m.Release(held)
		if held = m.Clamp(large); !m.Acquire(held, cancel, nil) {
			return nil, nil, ErrCanceled
		}
		_, err = io.Copy(&buf, io.LimitReader(src, limit+1-int64(buf.Len())))
	}
	switch {
	case err != nil:
		releaseHeld()
		return nil, nil, fmt.Errorf("%w: decompressing %s records: %v", ErrCorrupt, codec.name(), err)
	case int64(buf.Len()) > limit:
		releaseHeld()
		return nil, nil, fmt.Errorf("%w: records decompress to more than %d bytes", ErrCorrupt, limit)
	}
	return buf.Bytes(), releaseHeld, nil
}
