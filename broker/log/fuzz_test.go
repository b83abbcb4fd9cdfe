package log

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// fuzzSegment is a small valid segment: batches of 1, 3 and 2 records.
func fuzzSegment() []byte {
	var seg []byte
	next := int64(0)
	for _, n := range []int{1, 3, 2} {
		b := makeBatch(batchOpts{records: n, valueSize: 5})
		binary.BigEndian.PutUint64(b, uint64(next))
		next += int64(n)
		seg = append(seg, b...)
	}
	return seg
}

// FuzzRecoveryScan feeds arbitrary bytes to recovery as the only segment of
// a log that was not shut down cleanly. Open must not panic and must leave a
// segment made only of valid batches whose offsets continue each other
// except across the reported lost ranges: the input minus the quarantined
// stretches (each kept byte for byte in its quarantine file) minus a cut
// tail, with the log end offset where the last kept batch ends.
func FuzzRecoveryScan(f *testing.F) {
	seg := fuzzSegment()
	f.Add(seg)
	f.Add(seg[:len(seg)-7])
	f.Add(append(bytes.Clone(seg), make([]byte, 100)...))
	flipped := bytes.Clone(seg)
	flipped[len(flipped)/2] ^= 1
	f.Add(flipped)
	first := bytes.Clone(seg)
	first[30] ^= 1
	f.Add(first)
	f.Add(append(append(bytes.Clone(seg[:70]), 0xff, 0xfe), seg[70:]...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "00000000000000000000.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, rep, err := Open(dir, Config{IndexIntervalBytes: 64, FlushInterval: 1 << 40, RetentionCheckInterval: 1 << 40}, quietLogger())
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()
		kept, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		pos := int64(0)
		gaps := map[int64]int64{}
		for _, r := range rep.Lost {
			if r.FromByte < pos || r.ToByte <= r.FromByte || r.ToByte > int64(len(data)) || r.NextOffset < r.FirstOffset {
				t.Fatalf("lost range %v out of order or empty", r)
			}
			q, err := os.ReadFile(r.Quarantine)
			if err != nil || !bytes.Equal(q, data[r.FromByte:r.ToByte]) {
				t.Fatalf("quarantine %s does not hold the damaged bytes: %v", r.Quarantine, err)
			}
			want = append(want, data[pos:r.FromByte]...)
			pos = r.ToByte
			gaps[r.FirstOffset] = r.NextOffset
		}
		want = append(want, data[pos:int64(len(data))-rep.TruncatedBytes]...)
		if !bytes.Equal(kept, want) {
			t.Fatal("recovery kept other bytes than the input minus quarantined and cut ones")
		}
		next := int64(0)
		for b := kept; len(b) > 0; {
			if len(b) < batchHeaderSize {
				t.Fatalf("%d bytes kept after the last batch", len(b))
			}
			h := parseHeader(b)
			if h.length < minBatchLength || h.size() > int64(len(b)) {
				t.Fatalf("kept a batch with length %d in %d bytes", h.length, len(b))
			}
			if _, err := validateBatch(b[:h.size()]); err != nil {
				t.Fatalf("kept an invalid batch: %v", err)
			}
			if to, ok := gaps[next]; ok {
				next = to
			}
			if h.baseOffset != next {
				t.Fatalf("kept base offset %d, want %d", h.baseOffset, next)
			}
			next = h.nextOffset()
			b = b[h.size():]
		}
		if l.LogEndOffset() != next || l.HighWatermark() != next {
			t.Fatalf("LEO %d, HW %d; the kept batches end at %d", l.LogEndOffset(), l.HighWatermark(), next)
		}
		if next > 0 {
			s, err := l.Read(0, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, s); !bytes.Equal(got, kept) {
				t.Fatal("Read returned other bytes than the recovered segment")
			}
		}
		if res, err := l.Append(makeBatch(batchOpts{})); err != nil || res.BaseOffset != next {
			t.Fatalf("append after recovery: %+v, %v", res, err)
		}
	})
}

// FuzzValidateBatch checks that Append's validator never panics and agrees
// with the recovery scanner: a batch one accepts, the other accepts.
func FuzzValidateBatch(f *testing.F) {
	f.Add(makeBatch(batchOpts{}))
	f.Add(makeBatch(batchOpts{records: 4, pid: 9, epoch: 1, seq: 3}))
	b := makeBatch(batchOpts{records: 2})
	b[offMagic] = 1
	f.Add(b)
	f.Add(make([]byte, batchHeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := validateBatch(data)
		r := newReader(bytes.NewReader(data), int64(len(data)), readWindow)
		sh, p := checkBatchAt(r, 0, h.baseOffset, true)
		if err != nil {
			if p == nil && sh.size() == int64(len(data)) {
				t.Fatalf("validateBatch refused (%v) a batch the scanner accepts", err)
			}
			return
		}
		if p != nil {
			t.Fatalf("validateBatch accepted a batch the scanner refuses: %v", p)
		}
		if h.size() != int64(len(data)) || h.magic != 2 || h.recordCount < 1 || h.nextOffset()-h.baseOffset != int64(h.recordCount) {
			t.Fatalf("accepted an inconsistent batch: %+v", h)
		}
	})
}
