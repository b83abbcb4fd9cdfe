package recordbatch

import (
	"fmt"
	"testing"
)

// BenchmarkWalkPlain walks one uncompressed batch of 1,000 records of 200
// bytes per op, the loader's common case: the record walk alone, records
// appended to a reused slice.
func BenchmarkWalkPlain(b *testing.B) {
	recs := make([]rec, 1000)
	for i := range recs {
		recs[i] = rec{key: fmt.Appendf(nil, "k%d", i), value: fmt.Appendf(nil, "%0200d", i*7919)}
	}
	batch := plain(0, recs...)
	out := make([]Record, 0, len(recs))
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for range b.N {
		got, _, err := Walk(out[:0], batch, 0, 64<<20)
		if err != nil || len(got) != len(recs) {
			b.Fatalf("%d records, %v", len(got), err)
		}
	}
}
