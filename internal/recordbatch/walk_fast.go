package recordbatch

// Fields is one record as it lies in a batch's (decompressed) records.
// Parse fills it; every in-memory reader of records reads them through it:
// the loader's reader (walkRecords), the cleaner and the max-timestamp
// search of broker/log. Two walks only check records: fastWalk, the
// validator's hot path, and the streaming recordWalker, which reads
// through a decompression window and explains what is wrong; FuzzFastWalk
// holds all three to the same verdict.
type Fields struct {
	TimestampDelta int64
	OffsetDelta    int64
	End            int // the byte after the record

	// Where the key and value lie in the bytes parsed (start -1: null);
	// Key and Value slice them, so that the validator, which reads
	// neither, builds no slice.
	key, value span

	// Where Parse stopped, for the caller's error message.
	length  int64 // the length field
	headers int64 // the header count
	header  int64 // the header it stopped at
	at      int   // the byte it stopped at
}

// span is a field's bytes, b[start:end]; start -1 for a null field.
type span struct{ start, end int }

// Key is the record's key in b, the bytes Parse read, or nil for a null
// key; its capacity ends with it.
func (r *Fields) Key(b []byte) []byte { return r.key.in(b) }

// Value is the record's value in b, or nil for a null value (a tombstone).
func (r *Fields) Value(b []byte) []byte { return r.value.in(b) }

func (s span) in(b []byte) []byte {
	if s.start < 0 {
		return nil
	}
	return b[s.start:s.end:s.end]
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
// left over.
func (r *Fields) Parse(b []byte, pos int) bool { return r.parse(b, pos) == recordOK }

func (r *Fields) parse(b []byte, pos int) fault {
	// Locals, and the explaining fields written only on a failure: this
	// runs once a record on every append.
	length, p := ReadVarint32(b, pos)
	if p < 0 {
		return faultLengthVarint
	}
	if length < 1 || int64(len(b)-p) < length {
		r.length, r.at = length, p
		return faultLength
	}
	end := p + int(length)
	r.End = end
	rec := b[:end]
	p++ // attributes
	if r.TimestampDelta, p = ReadVarint64(rec, p); p < 0 {
		return faultTimestamp
	}
	if r.OffsetDelta, p = ReadVarint32(rec, p); p < 0 {
		return faultDelta
	}
	if r.key, p = fieldAt(rec, p, -1); p < 0 {
		return faultKey
	}
	if r.value, p = fieldAt(rec, p, -1); p < 0 {
		return faultValue
	}
	headers, p := ReadVarint32(rec, p)
	if p < 0 || headers < 0 {
		r.headers = headers
		return faultHeaderCount
	}
	for h := int64(0); h < headers; h++ {
		if _, p = fieldAt(rec, p, 0); p < 0 {
			r.header = h
			return faultHeaderKey
		}
		if _, p = fieldAt(rec, p, -1); p < 0 {
			r.header = h
			return faultHeaderValue
		}
	}
	if p != end {
		r.at = p
		return faultTrailing
	}
	return recordOK
}

// fastWalk is the uncompressed records' common case: it says whether b is
// exactly count well-formed records numbered 0..count-1, with the varints
// decoded inline and no error built. Any doubt sends the batch to the
// recordWalker, which decides and explains; the two must agree, and
// Fields.Parse with them (FuzzFastWalk checks that they do). It is Parse
// specialised for Append's hot path: reading the fields into a Fields
// instead of skipping them costs about 14 % more instructions a record
// (BenchmarkValidateBatch/none under cachegrind).
func fastWalk(b []byte, count int32) bool {
	pos := 0
	for i := int32(0); i < count; i++ {
		length, p := ReadVarint32(b, pos)
		if p < 0 || length < 1 || int64(len(b)-p) < length {
			return false
		}
		end := p + int(length)
		rec := b[:end]
		p++ // attributes
		if _, p = ReadVarint64(rec, p); p < 0 {
			return false
		}
		var delta int64
		if delta, p = ReadVarint32(rec, p); p < 0 || delta != int64(i) {
			return false
		}
		if _, p = fieldAt(rec, p, -1); p < 0 { // key
			return false
		}
		if _, p = fieldAt(rec, p, -1); p < 0 { // value
			return false
		}
		var headers int64
		if headers, p = ReadVarint32(rec, p); p < 0 || headers < 0 {
			return false
		}
		for ; headers > 0 && p >= 0; headers-- {
			if _, p = fieldAt(rec, p, 0); p >= 0 {
				_, p = fieldAt(rec, p, -1)
			}
		}
		if p != end {
			return false
		}
		pos = end
	}
	return pos == len(b)
}

// ReadVarint32 decodes the zigzag varint of a 32-bit field at b[pos:]; the
// position after it is -1 when it is cut short, too long or out of range.
// It and ReadVarint64 are written out each rather than sharing a loop by
// bit width: so they are small enough to inline, which saves a call per
// field of every record appended (about 5 % of validating a batch).
func ReadVarint32(b []byte, pos int) (int64, int) {
	var x uint32
	for s := uint(0); s < 35; s += 7 {
		if pos < 0 || pos >= len(b) {
			return 0, -1
		}
		c := b[pos]
		pos++
		if s == 28 && c > 0x0f {
			return 0, -1 // more than 32 bits
		}
		x |= uint32(c&0x7f) << s
		if c < 0x80 {
			return int64(int32(x>>1) ^ -int32(x&1)), pos
		}
	}
	return 0, -1
}

// ReadVarint64 is ReadVarint32 for a 64-bit field.
func ReadVarint64(b []byte, pos int) (int64, int) {
	var x uint64
	for s := uint(0); s < 70; s += 7 {
		if pos < 0 || pos >= len(b) {
			return 0, -1
		}
		c := b[pos]
		pos++
		if s == 63 && c > 1 {
			return 0, -1 // more than 64 bits
		}
		x |= uint64(c&0x7f) << s
		if c < 0x80 {
			return int64(x>>1) ^ -int64(x&1), pos
		}
	}
	return 0, -1
}

// fieldAt reads a length-prefixed field whose length may not be below min
// (-1 allows null), returning where its bytes lie and the position after
// it, or -1.
func fieldAt(b []byte, pos int, min int64) (span, int) {
	n, p := ReadVarint32(b, pos)
	switch {
	case p < 0 || n < min || int64(len(b)-p) < n:
		return span{}, -1
	case n < 0:
		return span{-1, -1}, p
	}
	return span{p, p + int(n)}, p + int(n)
}
