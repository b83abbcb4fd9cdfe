package log

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkClean measures the cleaner's throughput in bytes of log cleaned
// a second (MB/s): a 32 MiB compacted log of 100-byte values under 20,000
// keys, in batches of 50 uncompressed records, cleaned once from dirty to
// clean (build the offset map, rewrite every sealed segment, swap them in).
//
//	go test -run '^$' -bench BenchmarkClean -benchtime 5x ./broker/log/
func BenchmarkClean(b *testing.B) {
	clock := newFakeClock()
	cfg := compactConfig(clock)
	cfg.SegmentBytes = 4 << 20
	tmpl := filepath.Join(b.TempDir(), "p")
	l, _, err := Open(tmpl, cfg, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	recs := make([]kv, 50)
	for i := 0; l.Size() < 32<<20; i++ {
		for j := range recs {
			recs[j] = kv{fmt.Sprintf("key-%05d", (i*50+j*7919)%20000), value}
		}
		if _, err := l.Append(keyedBatch(clock.Now().UnixMilli(), nil, recs...)); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	m := newOffsetMap(DefaultCleanerBufferBytes)
	b.ResetTimer()
	var read int64
	for range b.N {
		b.StopTimer()
		dir := copyDir(b, tmpl)
		l, _, err := Open(dir, cfg, quietLogger())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		st, err := l.clean(m, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		read = st.BytesRead
		l.Close()
		os.RemoveAll(dir)
		b.StartTimer()
	}
	b.SetBytes(read)
}
