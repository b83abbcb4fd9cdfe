package recordbatch

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/golang/snappy"
)

// xerialFrame frames b the way the Java client's snappy does: the xerial
// header, then blocks of a 4-byte length and a raw snappy block.
func xerialFrame(b []byte, blockSize int) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for len(b) > 0 {
		n := min(blockSize, len(b))
		block := snappy.Encode(nil, b[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		b = b[n:]
	}
	return out
}

// BenchmarkWalkArena walks one compressed batch of 1,000 records of 200
// bytes per op into an arena with room for it, as the loader does with
// each partition's share of a fetch response: allocs/op counts what
// expanding a batch costs beyond the reused arena.
func BenchmarkWalkArena(b *testing.B) {
	recs := make([]rec, 1000)
	for i := range recs {
		v := fmt.Appendf(nil, "%0200d", i*7919)
		recs[i] = rec{value: v}
	}
	raw := encodeRecords(recs)
	cases := []struct {
		name  string
		codec int16
		data  []byte
	}{
		{"gzip", 1, compress(b, 1, raw)},
		{"snappy", 2, compress(b, 2, raw)},
		{"snappy-xerial", 2, xerialFrame(raw, 32<<10)},
		{"lz4", 3, compress(b, 3, raw)},
		{"zstd", 4, compress(b, 4, raw)},
	}
	for _, c := range cases {
		batch := makeBatch(0, c.codec, int32(len(recs)), int32(len(recs)-1), c.data)
		b.Run(c.name, func(b *testing.B) {
			arena := make([]byte, 0, 2*len(raw))
			out := make([]Record, 0, len(recs))
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for range b.N {
				arena = arena[:0]
				got, _, err := WalkArena(out[:0], &arena, batch, 0, 64<<20)
				if err != nil || len(got) != len(recs) {
					b.Fatalf("%d records, %v", len(got), err)
				}
			}
		})
	}
}
