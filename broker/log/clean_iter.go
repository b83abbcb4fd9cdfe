package log

// How the cleaner walks a segment: batch by batch (eachBatch) and record
// by record (eachRecord, parseRecord), stopping early when asked to.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// parseRecord reads the record at b[pos:]; Append validated it, so a
// failure means damage since.
func parseRecord(b []byte, pos int) (cleanRecord, bool) {
	var f recordbatch.Fields
	if !f.Parse(b, pos) {
		return cleanRecord{start: pos}, false
	}
	key := f.Key(b)
	return cleanRecord{delta: f.OffsetDelta, key: key, hasKey: key != nil, tombstone: f.Value(b) == nil, start: pos, end: f.End}, true
}

// eachBatch reads the batches of s in order and gives each, with its
// records (decompressed if need be) parsed, to visit, until visit returns
// false. Memory is one batch at a time.
func eachBatch(s *segment, limit int64, stop <-chan struct{},
	visit func(h *recordbatch.Header, raw, records []byte, recs []cleanRecord) bool) error {
	br := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, s.size), 1<<20)
	var raw []byte
	var recs []cleanRecord
	for pos := int64(0); pos < s.size; {
		select {
		case <-stop:
			return errCleanStopped
		default:
		}
		var pre [recordbatch.LengthPrefix]byte
		if _, err := io.ReadFull(br, pre[:]); err != nil {
			return fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		n := recordbatch.LengthPrefix + int64(int32(binary.BigEndian.Uint32(pre[recordbatch.OffLength:])))
		if n < recordbatch.HeaderSize || pos+n > s.size {
			return fmt.Errorf("%w: batch at byte %d: length %d", ErrCorruptBatch, pos, n)
		}
		if int64(cap(raw)) < n {
			raw = make([]byte, n)
		}
		raw = raw[:n]
		copy(raw, pre[:])
		if _, err := io.ReadFull(br, raw[recordbatch.LengthPrefix:]); err != nil {
			return fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		h := recordbatch.ParseHeader(raw)
		records := raw[recordbatch.HeaderSize:]
		if codec := recordbatch.BatchCodec(raw); codec != CodecNone && h.RecordCount > 0 {
			var err error
			if records, err = recordbatch.DecompressAll(codec, records, limit); err != nil {
				return fmt.Errorf("batch at byte %d: %w", pos, err)
			}
		}
		recs = recs[:0]
		for p, i := 0, int32(0); i < h.RecordCount; i++ {
			r, ok := parseRecord(records, p)
			if !ok {
				return fmt.Errorf("%w: batch at byte %d: record %d does not parse", ErrInvalidRecord, pos, i)
			}
			recs = append(recs, r)
			p = r.end
		}
		if !visit(&h, raw, records, recs) {
			return nil
		}
		pos += n
	}
	return nil
}

// eachRecord is eachBatch one record at a time.
func eachRecord(s *segment, limit int64, stop <-chan struct{}, visit func(h *recordbatch.Header, r *cleanRecord, records []byte) bool) error {
	return eachBatch(s, limit, stop, func(h *recordbatch.Header, _, records []byte, recs []cleanRecord) bool {
		for i := range recs {
			if !visit(h, &recs[i], records) {
				return false
			}
		}
		return true
	})
}
