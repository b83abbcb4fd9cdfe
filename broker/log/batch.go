package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Byte layout of a Kafka RecordBatch v2 header. Everything from attributes
// to the end of the batch is covered by the CRC; the base offset, length,
// partition leader epoch and magic are not.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
	batchHeaderSize    = 61

	// lengthPrefix is the part of the header before the length field's
	// coverage starts: the base offset and the length itself.
	lengthPrefix = 12
	// minBatchLength is the smallest legal value of the length field: the
	// header after the prefix, with no records.
	minBatchLength = batchHeaderSize - lengthPrefix
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeader is the part of a RecordBatch header the log works with.
type batchHeader struct {
	baseOffset      int64
	length          int32 // the length field: bytes after the 12-byte prefix
	magic           int8
	crc             uint32
	lastOffsetDelta int32
	maxTimestamp    int64
	producerID      int64
	producerEpoch   int16
	baseSequence    int32
	recordCount     int32
}

// size is the number of bytes the whole batch takes in a segment.
func (h *batchHeader) size() int64 { return lengthPrefix + int64(h.length) }

// nextOffset is the offset after the batch's last record.
func (h *batchHeader) nextOffset() int64 { return h.baseOffset + int64(h.lastOffsetDelta) + 1 }

func parseHeader(b []byte) batchHeader {
	_ = b[batchHeaderSize-1]
	return batchHeader{
		baseOffset:      int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		length:          int32(binary.BigEndian.Uint32(b[offLength:])),
		magic:           int8(b[offMagic]),
		crc:             binary.BigEndian.Uint32(b[offCRC:]),
		lastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		maxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		producerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		producerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		baseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		recordCount:     int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
}

// checkHeader applies the rules that need only the header: magic and record
// counts. The length and CRC are checked by the caller, which knows how many
// bytes it has.
//
// A batch in a segment may hold fewer records than its offsets span, down to
// none: the cleaner rewrites a batch with the records compaction keeps and
// keeps its last offset delta (and so its offsets), as Kafka does; and it
// keeps the header of an idempotent producer's newest batch even when no
// record survives, so that producer state can be rebuilt from the log.
// Append is stricter (validateRecords): a producer's batch numbers its
// records 0..n-1.
func checkHeader(h *batchHeader) error {
	if h.magic != 2 {
		return fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, h.magic)
	}
	if h.lastOffsetDelta < 0 {
		return fmt.Errorf("%w: last offset delta %d is negative", ErrCorruptBatch, h.lastOffsetDelta)
	}
	if h.recordCount < 0 || h.recordCount > h.lastOffsetDelta+1 {
		return fmt.Errorf("%w: record count %d does not fit last offset delta %d",
			ErrCorruptBatch, h.recordCount, h.lastOffsetDelta)
	}
	return nil
}

// checkFraming checks that b is exactly one RecordBatch v2 as a frame:
// its length field matches len(b), magic is 2, the CRC32C matches and the
// record count agrees with the last offset delta. Recovery trusts a batch
// that passes, since Append checked its records before writing it.
func checkFraming(b []byte) (batchHeader, error) {
	if len(b) < batchHeaderSize {
		return batchHeader{}, fmt.Errorf("%w: %d bytes is shorter than the %d-byte batch header",
			ErrCorruptBatch, len(b), batchHeaderSize)
	}
	h := parseHeader(b)
	if h.length < minBatchLength {
		return h, fmt.Errorf("%w: length field %d is below the minimum %d", ErrCorruptBatch, h.length, minBatchLength)
	}
	if int64(len(b)) != h.size() {
		return h, fmt.Errorf("%w: length field %d says %d bytes but the batch has %d",
			ErrCorruptBatch, h.length, h.size(), len(b))
	}
	if err := checkHeader(&h); err != nil {
		return h, err
	}
	if sum := crc32.Checksum(b[offAttributes:], castagnoli); sum != h.crc {
		return h, fmt.Errorf("%w: crc mismatch: header says %08x, bytes give %08x", ErrCorruptBatch, h.crc, sum)
	}
	return h, nil
}

// validateBatch checks b as Append must before storing it: the framing
// (checkFraming) and then every record inside, decompressed to at most
// limit bytes when the batch is compressed. The bytes are only read, never
// re-encoded.
func validateBatch(b []byte, limit int64) (batchHeader, error) {
	return validateRecords(b, limit, false)
}

func validateRecords(b []byte, limit int64, requireKey bool) (batchHeader, error) {
	h, _, err := validateRecordsSized(b, limit, requireKey)
	return h, err
}

// validateRecordsSized is validateRecords that also says how many bytes
// the records decompressed to (0 for an uncompressed batch). With
// requireKey (a compacted log) a record without a key is refused:
// compaction keeps the last record of each key, and a keyless record has
// none to be kept by. Only compacted logs pay for that check (they skip
// fastWalk).
func validateRecordsSized(b []byte, limit int64, requireKey bool) (batchHeader, int64, error) {
	h, err := checkFraming(b)
	if err != nil {
		return h, 0, err
	}
	if h.recordCount != h.lastOffsetDelta+1 {
		return h, 0, fmt.Errorf("%w: last offset delta %d does not match record count %d",
			ErrCorruptBatch, h.lastOffsetDelta, h.recordCount)
	}
	attrs := binary.BigEndian.Uint16(b[offAttributes:])
	records := b[batchHeaderSize:]
	if codec := int(attrs & codecMask); codec != codecNone {
		n, err := walkCompressedSized(codec, records, h.recordCount, limit, requireKey)
		return h, n, err
	}
	if !requireKey && fastWalk(records, h.recordCount) {
		return h, 0, nil
	}
	w := recordWalker{buf: records, requireKey: requireKey}
	return h, 0, w.walk(h.recordCount)
}
