package recordbatch

// Reading fetched batches where they lie: the loader's reader, whose cost
// per record decides how close a load comes to the raw fetch rate.

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Record is one record of a batch.
type Record struct {
	Offset    int64
	Timestamp int64 // milliseconds since the epoch
	Key       []byte
	Value     []byte
}

// Error is a batch that cannot be read: Offset is its base offset.
type Error struct {
	Offset int64
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("record batch at offset %d: %s", e.Offset, e.Reason)
}

func (e *Error) Unwrap() error { return ErrCorrupt }

const (
	minRecordSize = 7 // a length, attributes, two deltas, null key and value, no headers

	logAppendTime = AttrLogAppendTime
	controlBatch  = 0x20
)

// Walk appends to dst the records of the batches in b whose offsets are at
// least from (and past those of the batches before them), and returns
// them with next, the offset after the last whole batch (from when b holds
// none: the offset to fetch next). A compressed batch may expand to at
// most maxDecompressed bytes.
//
// On an error, the records already appended and next are those of the
// whole batches before the bad one.
func Walk(dst []Record, b []byte, from, maxDecompressed int64) (recs []Record, next int64, err error) {
	return WalkArena(dst, nil, b, from, maxDecompressed)
}

// WalkArena is Walk expanding compressed batches into the spare capacity
// of *arena when they fit there, and appending them to it: a caller that
// keeps arena (and the records) until it is done with them can then reuse
// it for another response instead of allocating per batch. Batches that
// do not fit get a buffer of their own.
func WalkArena(dst []Record, arena *[]byte, b []byte, from, maxDecompressed int64) (recs []Record, next int64, err error) {
	next = from
	dst = slices.Grow(dst, countRecords(b))
	for len(b) >= LengthPrefix {
		base := int64(binary.BigEndian.Uint64(b))
		if len(b) > OffMagic && b[OffMagic] != 2 {
			return dst, next, &Error{base, fmt.Sprintf("message format magic %d; only v2 record batches (magic 2) can be read", int8(b[OffMagic]))}
		}
		length := int64(int32(binary.BigEndian.Uint32(b[OffLength:])))
		if length < HeaderSize-LengthPrefix {
			return dst, next, &Error{base, fmt.Sprintf("length %d is less than a batch header", length)}
		}
		if int64(len(b)) < LengthPrefix+length {
			break // cut short by the fetch's byte limit
		}
		batch := b[:LengthPrefix+length]
		b = b[LengthPrefix+length:]
		if crc := binary.BigEndian.Uint32(batch[OffCRC:]); Checksum(batch) != crc {
			return dst, next, &Error{base, "CRC32C does not match: the batch is damaged"}
		}
		attrs := binary.BigEndian.Uint16(batch[OffAttributes:])
		lastDelta := int64(int32(binary.BigEndian.Uint32(batch[OffLastOffsetDelta:])))
		count := int64(int32(binary.BigEndian.Uint32(batch[OffRecordCount:])))
		if lastDelta < 0 || count < 0 || count > lastDelta+1 {
			return dst, next, &Error{base, fmt.Sprintf("%d records do not fit last offset delta %d", count, lastDelta)}
		}
		end := base + lastDelta + 1
		// next, not from: a batch overlapping those before it (which a
		// broker should never send) must not repeat their offsets.
		if end <= next || attrs&controlBatch != 0 {
			next = max(next, end)
			continue
		}
		data := batch[HeaderSize:]
		if codec := Codec(attrs & codecMask); codec != 0 {
			var spare []byte
			if arena != nil {
				spare = (*arena)[len(*arena):cap(*arena)]
			}
			if data, err = DecompressRecordsInto(spare, codec, data, maxDecompressed); err != nil {
				return dst, next, &Error{base, err.Error()}
			}
			if len(data) > 0 && len(spare) >= len(data) && &spare[0] == &data[0] {
				*arena = (*arena)[:len(*arena)+len(data)]
				data = data[:len(data):len(data)]
			}
		}
		bt := batchTimes{base: int64(binary.BigEndian.Uint64(batch[OffFirstTimestamp:]))}
		if attrs&logAppendTime != 0 {
			bt.appendTime = int64(binary.BigEndian.Uint64(batch[OffMaxTimestamp:]))
			bt.useAppend = true
		}
		// Room for the batch's records at once, as many as its bytes can
		// hold at most: one growth a batch, not a doubling every few.
		dst = slices.Grow(dst, int(min(count, int64(len(data)/minRecordSize))))
		n := len(dst)
		if dst, err = walkRecords(dst, data, base, lastDelta, count, next, bt); err != nil {
			return dst[:n], next, err
		}
		next = max(next, end)
	}
	return dst, next, nil
}

// maxPresize bounds the records room made for a response up front: its
// batches' counts are not checked yet and could claim billions.
const maxPresize = 1 << 16

// countRecords adds up the record counts of the whole batches in b, as
// their headers say, up to maxPresize: the room to make for them at once
// rather than growing the slice (and copying it) batch by batch.
func countRecords(b []byte) int {
	n := 0
	for len(b) >= HeaderSize && n < maxPresize {
		size := LengthPrefix + int64(int32(binary.BigEndian.Uint32(b[OffLength:])))
		if size < HeaderSize || size > int64(len(b)) {
			break
		}
		n += int(max(0, int32(binary.BigEndian.Uint32(b[OffRecordCount:]))))
		b = b[size:]
	}
	return min(n, maxPresize)
}

type batchTimes struct {
	base, appendTime int64
	useAppend        bool // log append time: every record has the batch's
}

// walkRecords appends the count records in data, which must be exactly
// them.
func walkRecords(dst []Record, data []byte, base, lastDelta, count, from int64, bt batchTimes) ([]Record, error) {
	pos := 0
	prevDelta := int64(-1)
	var r Fields
	for i := range count {
		if f := r.parse(data, pos); f != recordOK {
			return dst, recordErr(base, i, count, "%s", r.explain(f, data, pos))
		}
		if r.OffsetDelta <= prevDelta || r.OffsetDelta > lastDelta {
			return dst, recordErr(base, i, count, "offset delta %d after %d, outside the batch's 0..%d", r.OffsetDelta, prevDelta, lastDelta)
		}
		prevDelta = r.OffsetDelta
		pos = r.End
		if off := base + r.OffsetDelta; off >= from {
			ts := bt.base + r.TimestampDelta
			if bt.useAppend {
				ts = bt.appendTime
			}
			dst = append(dst, Record{Offset: off, Timestamp: ts, Key: r.Key(data), Value: r.Value(data)})
		}
	}
	if pos != len(data) {
		return dst, &Error{base, fmt.Sprintf("%d bytes after its %d records", len(data)-pos, count)}
	}
	return dst, nil
}

// explain says what is wrong with the record at b[pos:] that parse
// refused with f.
func (r *Fields) explain(f fault, b []byte, pos int) string {
	switch f {
	case faultLengthVarint:
		return fmt.Sprintf("length cut short (%d bytes left)", len(b)-pos)
	case faultLength:
		return fmt.Sprintf("length %d with %d bytes left", r.length, len(b)-r.at)
	case faultTimestamp:
		return "timestamp delta cut short"
	case faultDelta:
		return "offset delta cut short or past 32 bits"
	case faultKey:
		return "key length does not fit the record"
	case faultValue:
		return "value length does not fit the record"
	case faultHeaderCount:
		return fmt.Sprintf("header count %d", r.headers)
	case faultHeaderKey:
		return fmt.Sprintf("header %d's key does not fit the record", r.header)
	case faultHeaderValue:
		return fmt.Sprintf("header %d's value does not fit the record", r.header)
	}
	return fmt.Sprintf("%d bytes after the headers", r.End-r.at)
}

func recordErr(base, i, count int64, format string, args ...any) error {
	return &Error{base, fmt.Sprintf("record %d of %d: ", i, count) + fmt.Sprintf(format, args...)}
}
