package recordbatch

// Fields is one record as it lies in a batch's (decompressed) records.
// Parse fills it; every in-memory walk reads records through it: the
// validator's fast path (fastWalk), the loader's reader (walkRecords), the
// cleaner and the max-timestamp search of broker/log. The streaming
// recordWalker is the one other reader of records: it reads through a
// decompression window and explains what is wrong, and FuzzFastWalk holds
// the two to the same verdict.
type Fields struct {
	TimestampDelta int64
	OffsetDelta    int64
	Key            []byte // nil for a null key
	Value          []byte // nil for a null value (a tombstone)
	End            int    // the byte after the record

	// Where Parse stopped, for the caller's error message.
	length  int64 // the length field
	headers int64 // the header count
	header  int64 // the header it stopped at
	at      int   // the byte it stopped at
}

// fault says which field of a record Parse refused.
type fault uint8

const (
	recordOK fault = iota
	faultLengthVarint
	faultLength
	faultTimestamp
	faultDelta
	faultKey
	faultValue
	faultHeaderCount
	faultHeaderKey
	faultHeaderValue
	faultTrailing
)

// Parse reads the record at b[pos:] and says whether it is well-formed:
// its length (at least 1) within b, each field within the record, the
// 32-bit fields (length, offset delta, key, value and header lengths,
// header count) as 32-bit varints, a null header key refused, and no byte
// left over. The key and value point into b, their capacity capped.
func (r *Fields) Parse(b []byte, pos int) bool { return r.parse(b, pos) == recordOK }

func (r *Fields) parse(b []byte, pos int) fault {
	length, p := ReadVarint32(b, pos)
	r.length, r.at = length, p
	if p < 0 {
		return faultLengthVarint
	}
	if length < 1 || int64(len(b)-p) < length {
		return faultLength
	}
	r.End = p + int(length)
	rec := b[:r.End]
	p++ // attributes
	if r.TimestampDelta, p = ReadVarint64(rec, p); p < 0 {
		return faultTimestamp
	}
	if r.OffsetDelta, p = ReadVarint32(rec, p); p < 0 {
		return faultDelta
	}
	if r.Key, p = bytesAt(rec, p, -1); p < 0 {
		return faultKey
	}
	if r.Value, p = bytesAt(rec, p, -1); p < 0 {
		return faultValue
	}
	if r.headers, p = ReadVarint32(rec, p); p < 0 || r.headers < 0 {
		return faultHeaderCount
	}
	for r.header = 0; r.header < r.headers; r.header++ {
		if _, p = bytesAt(rec, p, 0); p < 0 {
			return faultHeaderKey
		}
		if _, p = bytesAt(rec, p, -1); p < 0 {
			return faultHeaderValue
		}
	}
	r.at = p
	if p != r.End {
		return faultTrailing
	}
	return recordOK
}

// fastWalk is the uncompressed records' common case: it says whether b is
// exactly count well-formed records numbered 0..count-1, with no error
// built. Any doubt sends the batch to the recordWalker, which decides and
// explains; the two must agree (FuzzFastWalk checks that they do).
func fastWalk(b []byte, count int32) bool {
	var r Fields
	pos := 0
	for i := int32(0); i < count; i++ {
		if r.parse(b, pos) != recordOK || r.OffsetDelta != int64(i) {
			return false
		}
		pos = r.End
	}
	return pos == len(b)
}

// ReadVarint32 decodes the zigzag varint of a 32-bit field at b[pos:]; the
// position after it is -1 when it is cut short, too long or out of range.
// Most fields of a record fit in one byte, which the first test decodes
// without the loop.
func ReadVarint32(b []byte, pos int) (int64, int) {
	if uint(pos) < uint(len(b)) && b[pos] < 0x80 {
		x := int64(b[pos])
		return x>>1 ^ -(x & 1), pos + 1
	}
	x, p := readUvarint(b, pos, 32)
	return int64(int32(uint32(x)>>1) ^ -int32(uint32(x)&1)), p
}

// ReadVarint64 is ReadVarint32 for a 64-bit field.
func ReadVarint64(b []byte, pos int) (int64, int) {
	if uint(pos) < uint(len(b)) && b[pos] < 0x80 {
		x := int64(b[pos])
		return x>>1 ^ -(x & 1), pos + 1
	}
	x, p := readUvarint(b, pos, 64)
	return int64(x>>1) ^ -int64(x&1), p
}

// readUvarint decodes the varint of at most bits bits at b[pos:]; the
// position after it is -1 when it is cut short or has more bits.
func readUvarint(b []byte, pos int, bits uint) (uint64, int) {
	var x uint64
	for s := uint(0); s < bits; s += 7 {
		if pos < 0 || pos >= len(b) {
			return 0, -1
		}
		c := b[pos]
		pos++
		if bits-s < 7 && c >= 1<<(bits-s) {
			return 0, -1 // more than bits bits
		}
		x |= uint64(c&0x7f) << s
		if c < 0x80 {
			return x, pos
		}
	}
	return 0, -1
}

// bytesAt reads a length-prefixed field whose length may not be below min
// (-1 allows null, returned as nil), returning it and the position after
// it, or -1.
func bytesAt(b []byte, pos int, min int64) ([]byte, int) {
	n, p := ReadVarint32(b, pos)
	switch {
	case p < 0 || n < min || int64(len(b)-p) < n:
		return nil, -1
	case n < 0:
		return nil, p
	}
	end := p + int(n)
	return b[p:end:end], end
}
