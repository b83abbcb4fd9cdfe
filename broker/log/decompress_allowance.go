package log

// A produce request's decompression allowance. MaxDecompressedBytes bounds
// one batch, so a request of a hundred 2 KB bombs decompressed 6.4 GB
// during validation and cost seven seconds of CPU before it was refused
// batch by batch. An Allowance is shared by every batch of one request
// (AppendBatchesWithin, AppendBatchesInWithin): each batch may decompress
// at most what the allowance has left, and is charged what it did, so a
// request's validation decompresses at most the allowance in all.

import (
	"errors"
	"fmt"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// Allowance is the bytes one request's batches may still decompress. It
// is used by one goroutine at a time (a request's appends run in turn).
type Allowance struct {
	total, left int64
}

// NewAllowance allows n decompressed bytes in all.
func NewAllowance(n int64) *Allowance { return &Allowance{total: n, left: n} }

// Left is what the allowance has left.
func (a *Allowance) Left() int64 { return a.left }

// validate validates a batch within the allowance (nil: the batch limit
// alone) and charges it.
func (a *Allowance) validate(b []byte, limit int64, keyed bool) (recordbatch.Header, error) {
	if a == nil {
		h, _, err := recordbatch.ValidateRecords(b, limit, keyed)
		return h, err
	}
	left := max(a.left, 0)
	capped := left < limit
	h, n, err := recordbatch.ValidateRecords(b, min(limit, left), keyed)
	a.left -= n
	if err != nil && capped && errors.Is(err, ErrCorruptBatch) {
		return h, fmt.Errorf("%w (the request's batches may decompress to %d bytes in all, and %d were left: a decompression bomb?)", err, a.total, left)
	}
	return h, err
}

// AppendBatchesWithin is AppendBatches charging allow for what the
// batches decompress to, and refusing the guarded producer's
// transactional batches if its transaction ended meanwhile (txn_guard.go).
func (l *Log) AppendBatchesWithin(batches [][]byte, allow *Allowance, guard TxnGuard) (AppendResult, error) {
	return l.appendBatches(batches, nil, allow, guard)
}

// AppendBatchesInWithin is AppendBatchesIn charging allow, with guard.
func (l *Log) AppendBatchesInWithin(batches [][]byte, codec Codec, maxSize int64, allow *Allowance, guard TxnGuard) (AppendResult, error) {
	return l.appendBatches(batches, &recoding{codec: codec, maxSize: maxSize}, allow, guard)
}
