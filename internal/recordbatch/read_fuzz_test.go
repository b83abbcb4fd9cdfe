package recordbatch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// FuzzWalk feeds the walker fetched bytes that lie: it must return records
// or an *Error, never panic, and never hand out records out of offset
// order, below from, or pointing outside what they claim.
//
//	go test -run '^$' -fuzz FuzzWalk ./internal/recordbatch/
func FuzzWalk(f *testing.F) {
	two := append(plain(0, kv("a", "1"), rec{value: []byte("2"), headers: 1}), plain(2, kv("c", "3"))...)
	f.Add(two, int64(0))
	odd := append(plain(1, kv("a", "1"), kv("b", "2")), plain(3, kv("c", "3"))...)
	f.Add(odd, int64(0))
	f.Add(two, int64(1))
	f.Add(two[:len(two)-3], int64(0))
	f.Add(makeBatch(5, controlBatch, 1, 0, encodeRecords([]rec{kv("\x00\x00\x00\x01", "\x00\x00\x00\x00\x00\x00")})), int64(0))
	f.Add(makeBatch(7, 2, 2, 1, compress(f, 2, encodeRecords([]rec{kv("a", "1"), kv("b", "2")}))), int64(0))
	f.Add(makeBatch(7, 4, 2, 1, compress(f, 4, encodeRecords([]rec{kv("a", "1"), kv("b", "2")}))), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, from int64) {
		const limit = 1 << 16
		// Most mutations break the CRC and stop there; fixing the first
		// batch's CRC lets them reach the lengths, counts and varints.
		if len(b) > HeaderSize && b[0]&1 == 1 {
			n := min(len(b), LengthPrefix+int(binary.BigEndian.Uint32(b[OffLength:])&0xfffff))
			if n > OffAttributes {
				binary.BigEndian.PutUint32(b[OffCRC:], crc32.Checksum(b[OffAttributes:n], castagnoli))
			}
		}
		recs, next, err := Walk(nil, b, from, limit)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
		}
		if next < from {
			t.Fatalf("next %d went back below %d", next, from)
		}
		prev := from - 1
		for _, r := range recs {
			if r.Offset <= prev {
				t.Fatalf("offset %d after %d", r.Offset, prev)
			}
			prev = r.Offset
		}
		if err == nil && len(recs) > 0 && prev >= next {
			t.Fatalf("record at %d not below next %d", prev, next)
		}
	})
}
