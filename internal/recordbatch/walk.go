package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The records of a RecordBatch v2 follow the header, one after another,
// each as
//
//	length          varint (bytes of the record after this field)
//	attributes      int8
//	timestampDelta  varlong
//	offsetDelta     varint (the record's index in the batch)
//	keyLength       varint (-1 for a null key), key
//	valueLength     varint (-1 for a null value), value
//	headerCount     varint, then per header:
//	  keyLength varint (>= 0), key, valueLength varint (-1 for null), value
//
// where varints are zigzag-encoded. A consumer trusts the offset deltas to
// number records, so a batch whose records lie about them would make it
// skip or repeat offsets; the walker below refuses such a batch before any
// byte of it is stored.

// walkWindow is the buffer a streaming walker decompresses into: records
// are checked as they come out, so memory does not depend on how large the
// decompressed batch is.
const walkWindow = 64 << 10

// errTooLarge ends a stream that decompresses to more than its limit.
var errTooLarge = errors.New("decompressed records exceed the limit")

// recordWalker reads the records of one batch, either from a byte slice
// that holds them all (src nil) or from a decompressing reader through a
// window. It never allocates per record.
type recordWalker struct {
	buf    []byte    // unread bytes are buf[pos:]
	pos    int       // next byte to read in buf
	base   int64     // position in the records of buf[0]
	src    io.Reader // nil when buf holds every record
	window []byte    // buf's backing array in streaming mode
	read   int64     // bytes taken from src so far
	limit  int64     // most bytes src may yield
	srcErr error     // why src stopped: io.EOF at the end, else a failure
	// emptyReads counts reads in a row that returned no byte and no error.
	emptyReads int
	// requireKey refuses a record with a null key (compacted logs).
	requireKey bool
}

// offset is the position of the next unread byte in the records.
func (w *recordWalker) offset() int64 { return w.base + int64(w.pos) }

// need makes at least n bytes readable at buf[pos:] when the records have
// them, and says whether it could.
func (w *recordWalker) need(n int) bool {
	if len(w.buf)-w.pos >= n {
		return true
	}
	for w.src != nil && w.srcErr == nil && len(w.buf)-w.pos < n {
		w.fill()
	}
	return len(w.buf)-w.pos >= n
}

// fill moves the unread bytes to the front of the window and reads more.
func (w *recordWalker) fill() {
	rest := copy(w.window[:cap(w.window)], w.buf[w.pos:])
	w.base += int64(w.pos)
	w.pos = 0
	room := w.window[rest:cap(w.window)]
	// Reading one byte past the limit is how an oversized stream is seen.
	if left := w.limit + 1 - w.read; int64(len(room)) > left {
		room = room[:left]
	}
	n, err := w.src.Read(room)
	w.read += int64(n)
	w.buf = w.window[:rest+n]
	switch {
	case w.read > w.limit:
		w.srcErr = errTooLarge
	case err != nil:
		w.srcErr = err
	case n == 0:
		// A reader that keeps returning nothing would spin the walker.
		if w.emptyReads++; w.emptyReads > 100 {
			w.srcErr = io.ErrNoProgress
		}
	default:
		w.emptyReads = 0
	}
}

// varint reads a zigzag varint of a field of at most maxLen bytes
// (binary.MaxVarintLen32 or 64). Most fields of a record fit in one byte,
// which the first test decodes without varintSlow.
func (w *recordWalker) varint(maxLen int) (int64, bool) {
	if w.pos < len(w.buf) && w.buf[w.pos] < 0x80 {
		c := w.buf[w.pos]
		w.pos++
		return int64(c>>1) ^ -int64(c&1), true
	}
	return w.varintSlow(maxLen)
}

// varintSlow reads a varint of at most maxLen bytes, refusing a 32-bit one
// whose value does not fit.
func (w *recordWalker) varintSlow(maxLen int) (int64, bool) {
	if len(w.buf)-w.pos < maxLen && w.src != nil {
		w.need(maxLen)
	}
	b := w.buf[w.pos:]
	if len(b) > maxLen {
		b = b[:maxLen]
	}
	v, n := binary.Varint(b)
	if n <= 0 || maxLen == binary.MaxVarintLen32 && v != int64(int32(v)) {
		return 0, false
	}
	w.pos += n
	return v, true
}

// skip passes over n bytes that must end by the record end.
func (w *recordWalker) skip(n, end int64) bool {
	if n < 0 || w.offset()+n > end {
		return false
	}
	if n <= int64(len(w.buf)-w.pos) {
		w.pos += int(n)
		return true
	}
	return w.skipSlow(n)
}

// skipSlow passes over n bytes that run past the window.
func (w *recordWalker) skipSlow(n int64) bool {
	for {
		avail := int64(len(w.buf) - w.pos)
		if n <= avail {
			w.pos += int(n)
			return true
		}
		n -= avail
		w.pos = len(w.buf)
		if !w.need(1) {
			return false
		}
	}
}

// atEnd says whether every byte of the records has been read.
func (w *recordWalker) atEnd() bool { return !w.need(1) }

// RecordError is an ErrInvalidRecord that names the record at fault, so
// the broker can point the producer at it (Produce's RecordErrors).
type RecordError struct {
	Index  int32  // the record's position in its batch, from 0
	Reason string // what is wrong with it
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%v: record %d: %s", ErrInvalidRecord, e.Index, e.Reason)
}

func (e *RecordError) Unwrap() error { return ErrInvalidRecord }

// recordError is a RecordError for record i, which starts at byte at of
// the (decompressed) records.
func recordError(i int32, at int64, format string, args ...any) error {
	return &RecordError{Index: i, Reason: fmt.Sprintf(format, args...) + fmt.Sprintf(" (record starts at byte %d of the records)", at)}
}

// walk checks that the records are exactly count well-formed records with
// offset deltas 0..count-1, using every byte and nothing more.
func (w *recordWalker) walk(count int32) error {
	for i := int32(0); i < count; i++ {
		at := w.offset()
		length, ok := w.varint(binary.MaxVarintLen32)
		switch {
		case !ok && !w.need(1):
			return w.short(i, at, fmt.Sprintf("the records end after %d of the %d records the batch counts", i, count))
		case !ok:
			return w.short(i, at, "length is not a 32-bit varint")
		case length < 0:
			return recordError(i, at, "length %d is negative", length)
		}
		start := w.offset()
		end := start + length
		if w.src == nil && end > int64(len(w.buf)) {
			return recordError(i, at, "length %d runs past the end of the batch (%d bytes left)", length, int64(len(w.buf))-start)
		}
		if !w.skip(1, end) { // attributes: no record-level attribute is defined
			return w.short(i, at, fmt.Sprintf("length %d leaves no room for the attributes or runs past the records", length))
		}
		if _, ok := w.varint(binary.MaxVarintLen64); !ok {
			return w.short(i, at, "timestamp delta is cut short or not a varlong")
		}
		delta, ok := w.varint(binary.MaxVarintLen32)
		if !ok {
			return w.short(i, at, "offset delta is cut short or not a 32-bit varint")
		}
		if delta != int64(i) {
			return recordError(i, at, "offset delta %d, want %d (its index in the batch)", delta, i)
		}
		keyMin := int64(-1)
		if w.requireKey {
			keyMin = 0
		}
		if err := w.bytesField(i, at, end, "key", keyMin); err != nil {
			return err
		}
		if err := w.bytesField(i, at, end, "value", -1); err != nil {
			return err
		}
		headers, ok := w.varint(binary.MaxVarintLen32)
		if !ok {
			return w.short(i, at, "header count is cut short or not a 32-bit varint")
		}
		if headers < 0 {
			return recordError(i, at, "header count %d is negative", headers)
		}
		for range headers {
			if err := w.bytesField(i, at, end, "header key", 0); err != nil {
				return err
			}
			if err := w.bytesField(i, at, end, "header value", -1); err != nil {
				return err
			}
		}
		if got := w.offset() - start; got != length {
			return recordError(i, at, "length says %d bytes but its fields take %d", length, got)
		}
	}
	if !w.atEnd() {
		if err := w.streamErr(); err != nil {
			return err
		}
		return fmt.Errorf("%w: bytes follow the last of the %d records the batch counts (at byte %d of the records)",
			ErrInvalidRecord, count, w.offset())
	}
	return w.streamErr()
}

// bytesField reads a length-prefixed field of a record ending at end; a
// length below min is refused (-1 allows null).
func (w *recordWalker) bytesField(i int32, at, end int64, name string, min int64) error {
	n, ok := w.varint(binary.MaxVarintLen32)
	if !ok {
		return w.short(i, at, name+" length is cut short or not a 32-bit varint")
	}
	if n == -1 && min == 0 && name == "key" {
		return recordError(i, at, "has no key, and the topic is compacted (cleanup.policy=compact keeps the last record of each key, so every record needs one)")
	}
	if n < min {
		return recordError(i, at, "%s length %d is negative", name, n)
	}
	if n > 0 && !w.skip(n, end) {
		return w.short(i, at, fmt.Sprintf("%s of %d bytes runs past the end of the record", name, n))
	}
	return nil
}

// short reports a record that could not be read: a failed decompression
// explains it better than the record does.
func (w *recordWalker) short(i int32, at int64, what string) error {
	if err := w.streamErr(); err != nil {
		return err
	}
	return recordError(i, at, "%s", what)
}

// streamErr is the decompressor's failure, if any, as an ErrCorrupt.
func (w *recordWalker) streamErr() error {
	switch {
	case w.srcErr == nil, w.srcErr == io.EOF:
		return nil
	case w.srcErr == errTooLarge:
		return fmt.Errorf("%w: records decompress to more than %d bytes", ErrCorrupt, w.limit)
	}
	return fmt.Errorf("%w: decompressing records: %v", ErrCorrupt, w.srcErr)
}
