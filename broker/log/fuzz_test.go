package log

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/recordbatch"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
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
			if len(b) < recordbatch.HeaderSize {
				t.Fatalf("%d bytes kept after the last batch", len(b))
			}
			h := recordbatch.ParseHeader(b)
			if h.Length < recordbatch.MinLength || h.Size() > int64(len(b)) {
				t.Fatalf("kept a batch with length %d in %d bytes", h.Length, len(b))
			}
			if _, err := recordbatch.CheckFraming(b[:h.Size()]); err != nil {
				t.Fatalf("kept an invalid batch: %v", err)
			}
			if to, ok := gaps[next]; ok {
				next = to
			}
			if h.BaseOffset != next {
				t.Fatalf("kept base offset %d, want %d", h.BaseOffset, next)
			}
			next = h.NextOffset()
			b = b[h.Size():]
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

// FuzzValidateBatch checks that Append's validator never panics, that a
// batch it accepts the recovery scanner accepts too, and that it never
// accepts a batch whose records do not decode: every accepted batch is
// decoded again with kmsg (after decompressing it separately) and must hold
// exactly its record count of records, numbered 0..n-1. With fix set, the
// length and CRC are recomputed first, so mutations reach the records and
// the decompressors instead of stopping at the CRC.
func FuzzValidateBatch(f *testing.F) {
	f.Add(makeBatch(batchOpts{}), false)
	f.Add(makeBatch(batchOpts{records: 4, pid: 9, epoch: 1, seq: 3}), false)
	b := makeBatch(batchOpts{records: 2})
	b[recordbatch.OffMagic] = 1
	f.Add(b, false)
	f.Add(make([]byte, recordbatch.HeaderSize), true)
	hdr := kmsg.Header{Key: "h", Value: []byte("v")}
	records := bytes.Join([][]byte{rbtest.Record(0, []byte("key"), []byte("value"), hdr), rbtest.Record(1, nil, nil), rbtest.Record(2, []byte{}, []byte("x"), hdr, hdr)}, nil)
	f.Add(rbtest.Batch(records, 3, 0), true)
	f.Add(rbtest.Batch(rbtest.Record(7, nil, []byte("v")), 1, 0), true)
	for _, c := range rbtest.Compressors {
		f.Add(rbtest.Batch(rbtest.Compress(c, records), 3, c.Codec), true)
		f.Add(rbtest.Batch(rbtest.Compress(c, records), 3, c.Codec), false)
	}
	const limit = 1 << 20 // keeps a mutated bomb cheap
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix && len(data) >= recordbatch.HeaderSize {
			data = rbtest.FixBatch(bytes.Clone(data))
		}
		h, err := recordbatch.Validate(data, limit)
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) && !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrUnsupportedMagic) {
				t.Fatalf("refused with an error of no known class: %v", err)
			}
			return
		}
		r := newReader(bytes.NewReader(data), int64(len(data)), readWindow)
		if _, p := checkBatchAt(r, 0, h.BaseOffset, true); p != nil {
			t.Fatalf("recordbatch.Validate accepted a batch the scanner refuses: %v", p)
		}
		if h.Size() != int64(len(data)) || h.Magic != 2 || h.RecordCount < 1 || h.NextOffset()-h.BaseOffset != int64(h.RecordCount) {
			t.Fatalf("accepted an inconsistent batch: %+v", h)
		}
		if err := decodeRecords(data, limit); err != nil {
			t.Fatalf("accepted a batch whose records do not decode: %v", err)
		}
	})
}

// decodeRecords is the fuzz target's second opinion: it decompresses the
// records whole and decodes each with kmsg, bounded by its length.
func decodeRecords(batch []byte, limit int64) error {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		return err
	}
	raw, err := decompressWhole(int(rb.Attributes&7), rb.Records, limit)
	if err != nil {
		return err
	}
	for i := int32(0); i < rb.NumRecords; i++ {
		length, n := binary.Varint(raw)
		if n <= 0 || length < 0 || int64(len(raw)-n) < length {
			return fmt.Errorf("record %d: length %d with %d bytes left", i, length, len(raw))
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(raw[:n+int(length)]); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		if rec.OffsetDelta != i {
			return fmt.Errorf("record %d has offset delta %d", i, rec.OffsetDelta)
		}
		raw = raw[n+int(length):]
	}
	if len(raw) != 0 {
		return fmt.Errorf("%d bytes after the last record", len(raw))
	}
	return nil
}

// decompressWhole decompresses without the validator's streaming walker.
func decompressWhole(codec int, data []byte, limit int64) ([]byte, error) {
	var r io.Reader
	switch codec {
	case int(CodecNone):
		return data, nil
	case int(CodecGzip):
		zr, err := stdgzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		r = zr
	case int(CodecSnappy):
		if !bytes.HasPrefix(data, []byte("\x82SNAPPY\x00")) {
			return snappy.Decode(nil, data)
		}
		var out []byte
		for rest := data[16:]; len(rest) > 0; { // after the xerial header
			n := int(binary.BigEndian.Uint32(rest))
			block, err := snappy.Decode(nil, rest[4:4+n])
			if err != nil {
				return nil, err
			}
			out, rest = append(out, block...), rest[4+n:]
		}
		return out, nil
	case int(CodecLZ4):
		r = lz4.NewReader(bytes.NewReader(data))
	case int(CodecZstd):
		d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(data, nil)
	default:
		return nil, fmt.Errorf("codec %d", codec)
	}
	return io.ReadAll(io.LimitReader(r, limit+1))
}
