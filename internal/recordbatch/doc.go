// Package recordbatch is Kafka's RecordBatch v2 format, the bytes a
// producer sends, a segment stores and a fetch returns: the header layout
// and its CRC32C, the codecs (gzip, snappy raw and xerial-framed, lz4,
// zstd) with bounded decompression, and the walk over a batch's records.
// The storage engine (broker/log) validates and re-encodes with it, and the
// loader reads fetched batches with it, so both hold a batch to the same
// rules.
//
// What a caller may rely on:
//   - Validate checks a batch the way Kafka's log validator does before a
//     byte of it is stored: the frame (length, magic 2, CRC32C, record count
//     against the last offset delta) and every record in it (lengths that use
//     the batch's bytes exactly, offset deltas 0..n-1, as many records as the
//     count says, key, value and header lengths). A failure wraps ErrCorrupt
//     (framing, CRC, decompression) or ErrInvalidRecord (the records lie; a
//     *RecordError names the record), never panics, and allocates nothing by
//     what the batch claims.
//   - Compressed records are checked through a fixed window as they are
//     decompressed, and every decompression stops at the limit its caller
//     gives, so a decompression bomb costs bounded memory and CPU; a
//     MemoryBudget bounds what whole decompressions (re-encoding) hold at
//     once across callers.
//   - Walk and WalkArena read fetched batches where they lie: records come
//     out in offset order, each with its offset, timestamp (milliseconds),
//     key and value; the key and value slices point into the bytes given
//     (or into a batch's decompressed records), so those must stay unchanged
//     while the records are used. Every batch's CRC32C is checked and every
//     length, count and varint is held to the bytes there are: bytes that lie
//     give an *Error naming the batch's offset. A batch cut short at the end
//     of the bytes ends the walk without an error (a fetch response stops
//     where its byte limit falls); control batches (transaction markers)
//     yield no records and the offsets they cover count as read.
//
// Only magic 2 batches exist in a Tributary log (the broker refuses older
// formats on produce), so magic 0 and 1 message sets are refused.
package recordbatch

import "errors"

// Errors of a batch that cannot be stored or read. The broker maps each to
// a Kafka error code (broker/log re-exports them as its own).
var (
	// ErrCorrupt: bad length, CRC or record count in the batch header, or
	// compressed records that do not decompress within the limit
	// (CORRUPT_MESSAGE).
	ErrCorrupt = errors.New("corrupt record batch")
	// ErrInvalidRecord: a batch whose frame is sound but whose records are
	// not: offset deltas other than 0..n-1, fewer or more records than the
	// count, lengths that are negative or do not match the bytes (INVALID_RECORD).
	ErrInvalidRecord = errors.New("invalid record in batch")
	// ErrUnsupportedMagic: a batch that is not RecordBatch v2
	// (UNSUPPORTED_FOR_MESSAGE_FORMAT).
	ErrUnsupportedMagic = errors.New("record batch magic is not 2")
)
