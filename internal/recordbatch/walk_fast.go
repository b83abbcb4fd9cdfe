package recordbatch

// fastWalk is the uncompressed records' common case: it says whether b is
// exactly count well-formed records numbered 0..count-1, with the varints
// decoded inline and no error built. Any doubt sends the batch to the
// recordWalker, which decides and explains; the two must agree (the fuzz
// target checks that they do).
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
		if p = skipBytes(rec, p, -1); p < 0 { // key
			return false
		}
		if p = skipBytes(rec, p, -1); p < 0 { // value
			return false
		}
		var headers int64
		if headers, p = ReadVarint32(rec, p); p < 0 || headers < 0 {
			return false
		}
		for ; headers > 0 && p >= 0; headers-- {
			if p = skipBytes(rec, p, 0); p >= 0 {
				p = skipBytes(rec, p, -1)
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

// skipBytes passes a length-prefixed field whose length may not be below
// min, returning the position after it or -1.
func skipBytes(b []byte, pos int, min int64) int {
	n, pos := ReadVarint32(b, pos)
	if pos < 0 || n < min || int64(len(b)-pos) < n {
		return -1
	}
	if n > 0 {
		pos += int(n)
	}
	return pos
}
