package log

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// A scanProblem is the first byte of a segment that does not hold a valid
// batch. A torn tail is the expected result of a crash during a write (the
// last batch is incomplete, or the file ends in bytes that were allocated but
// never written); anything else is corruption.
type scanProblem struct {
	pos    int64
	torn   bool
	reason string
}

func (p *scanProblem) String() string {
	kind := "corrupt batch"
	if p.torn {
		kind = "torn tail"
	}
	return fmt.Sprintf("%s at byte %d: %s", kind, p.pos, p.reason)
}

// walk visits the batches of s from byte pos, whose first batch must have
// base offset next (or the end of a recorded gap starting there), up to r.size. Every batch is checked for a sane length
// that fits in the file, magic 2, consistent record counts and base-offset
// continuity; with verify it is also checked against its CRC32C, which
// means reading all of it rather than only its header.
//
// walk extends s.index by the interval rule and sets s.next and s.maxTs as
// it goes, so on return s describes the valid prefix [0, end).
func (s *segment) walk(r *reader, pos, next int64, interval int64, verify bool,
	visit func(pos int64, h *recordbatch.Header)) (end int64, problem *scanProblem) {
	s.next = next
	for pos < r.size {
		h, p := checkBatchAt(r, pos, s.gapEnd(next), verify)
		if p != nil {
			return pos, p
		}
		if pos > math.MaxUint32 || !relOffsetFits(s.base, h.NextOffset()-1) {
			return pos, &scanProblem{pos: pos, reason: "segment exceeds the 4 GiB / 2^32 offsets an index can address"}
		}
		s.maxTs = max(s.maxTs, h.MaxTimestamp)
		if e, ok := s.indexEntryFor(pos, h.BaseOffset, s.maxTs, interval); ok {
			s.index = append(s.index, e)
		}
		if visit != nil {
			visit(pos, &h)
		}
		pos += h.Size()
		next = h.NextOffset()
		s.next = next
	}
	return pos, nil
}

// checkBatchAt checks the batch starting at pos; see walk.
func checkBatchAt(r *reader, pos, next int64, verify bool) (recordbatch.Header, *scanProblem) {
	remaining := r.size - pos
	if remaining < recordbatch.LengthPrefix {
		return recordbatch.Header{}, &scanProblem{pos: pos, torn: true,
			reason: fmt.Sprintf("incomplete batch: %d bytes, less than a batch header", remaining)}
	}
	b, err := r.peek(pos, recordbatch.LengthPrefix)
	if err != nil {
		return recordbatch.Header{}, &scanProblem{pos: pos, reason: err.Error()}
	}
	length := int64(int32(binary.BigEndian.Uint32(b[recordbatch.OffLength:])))
	if length < recordbatch.MinLength {
		return recordbatch.Header{}, tornOrCorrupt(r, pos, fmt.Sprintf("length field %d is below the minimum %d", length, recordbatch.MinLength))
	}
	if recordbatch.LengthPrefix+length > remaining {
		return recordbatch.Header{}, &scanProblem{pos: pos, torn: true,
			reason: fmt.Sprintf("incomplete batch: %d of %d bytes", remaining, recordbatch.LengthPrefix+length)}
	}
	b, err = r.peek(pos, recordbatch.HeaderSize)
	if err != nil {
		return recordbatch.Header{}, &scanProblem{pos: pos, reason: err.Error()}
	}
	h := recordbatch.ParseHeader(b)
	if err := recordbatch.CheckHeader(&h); err != nil {
		return h, &scanProblem{pos: pos, reason: err.Error()}
	}
	if h.BaseOffset != next {
		return h, &scanProblem{pos: pos, reason: fmt.Sprintf("base offset %d, want %d (the end of the previous batch)", h.BaseOffset, next)}
	}
	if verify {
		sum := recordbatch.UpdateChecksum(0, b[recordbatch.OffAttributes:recordbatch.HeaderSize])
		for off, end := pos+recordbatch.HeaderSize, pos+h.Size(); off < end; {
			chunk, err := r.peek(off, int(min(end-off, int64(len(r.buf)))))
			if err != nil {
				return h, &scanProblem{pos: pos, reason: err.Error()}
			}
			sum = recordbatch.UpdateChecksum(sum, chunk)
			off += int64(len(chunk))
		}
		if sum != h.CRC {
			return h, &scanProblem{pos: pos, reason: fmt.Sprintf("crc mismatch: header says %08x, bytes give %08x", h.CRC, sum)}
		}
	}
	return h, nil
}

// tornOrCorrupt tells a file that ends in zeros from pos (space the file
// system allocated but the crash left unwritten: a torn tail) from garbage.
func tornOrCorrupt(r *reader, pos int64, reason string) *scanProblem {
	for off := pos; off < r.size; {
		chunk, err := r.peek(off, int(min(r.size-off, int64(len(r.buf)))))
		if err != nil {
			return &scanProblem{pos: pos, reason: reason}
		}
		for _, c := range chunk {
			if c != 0 {
				return &scanProblem{pos: pos, reason: reason}
			}
		}
		off += int64(len(chunk))
	}
	return &scanProblem{pos: pos, torn: true, reason: fmt.Sprintf("%d zero bytes at the end of the file (written space never filled)", r.size-pos)}
}

// A damage is a stretch of a segment that holds no valid batch, followed by
// valid data: the bytes [from, to) and the offsets [firstLost, nextKept)
// they held. to is a batch start (the resynchronisation point) or the end
// of a segment whose successor holds the next offsets.
type damage struct {
	from, to            int64
	firstLost, nextKept int64
	problem             *scanProblem
}

// scan CRC-checks every batch of s like walk, but does not stop at the first
// bad one: after a problem it resynchronises at the next valid batch and
// goes on, collecting the damaged stretches. below is the base offset of the
// next segment, or math.MaxInt64 when s is the last one: then a problem with
// no valid batch after it is the tail, returned as tail with end its byte
// position (a torn write, cut as always). In an earlier segment the bytes
// from a problem to the end are damage, since the next segment holds what
// comes after.
func (s *segment) scan(r *reader, interval, below int64, visit func(pos int64, h *recordbatch.Header)) (end int64, damaged []damage, tail *scanProblem) {
	pos, next := int64(0), s.base
	for {
		end, p := s.walk(r, pos, next, interval, true, visit)
		if p == nil {
			return end, damaged, nil
		}
		first := s.gapEnd(s.next)
		q, h, ok := resync(r, p.pos+1, first, below)
		if !ok && below == math.MaxInt64 {
			return p.pos, damaged, p
		}
		d := damage{from: p.pos, to: r.size, firstLost: first, nextKept: below, problem: p}
		if ok {
			d.to, d.nextKept = q, h.BaseOffset
		}
		damaged = append(damaged, d)
		if !ok {
			s.next = first
			return r.size, damaged, nil
		}
		pos, next = q, h.BaseOffset
	}
}

// resync finds the first position at or after from where a batch starts
// that can follow a damaged stretch: a plausible length that fits in the
// file, magic 2, consistent record counts, a base offset at or after next
// with all its offsets below below, and a matching CRC32C. Random bytes pass
// all of that with a probability far below one in 2^32 per position.
func resync(r *reader, from, next, below int64) (pos int64, h recordbatch.Header, ok bool) {
	for q := from; q+recordbatch.HeaderSize <= r.size; q++ {
		b, err := r.peek(q, recordbatch.HeaderSize)
		if err != nil {
			return 0, recordbatch.Header{}, false
		}
		if b[recordbatch.OffMagic] != 2 {
			continue
		}
		h := recordbatch.ParseHeader(b)
		if h.Length < recordbatch.MinLength || q+h.Size() > r.size || h.BaseOffset < next ||
			recordbatch.CheckHeader(&h) != nil || h.NextOffset() > below || h.NextOffset() < h.BaseOffset {
			continue
		}
		if _, p := checkBatchAt(r, q, h.BaseOffset, true); p == nil {
			return q, h, true
		}
	}
	return 0, recordbatch.Header{}, false
}
