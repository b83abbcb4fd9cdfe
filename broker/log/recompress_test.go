package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/recordbatch"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// recompressInput is batchOf with every header field a recompression must
// keep set to something recognisable: an idempotent producer's id, epoch
// and sequence, distinct timestamps, a partition leader epoch and the
// LogAppendTime attribute bit.
func recompressInput(records []byte, count int32, codec int16) []byte {
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: 7, Magic: 2, Attributes: codec | 0x08, LastOffsetDelta: count - 1,
		FirstTimestamp: 1_700_000_000_123, MaxTimestamp: 1_700_000_000_456,
		ProducerID: 4242, ProducerEpoch: 3, FirstSequence: 17, NumRecords: count, Records: records,
	}
	return rbtest.FixBatch(rb.AppendTo(nil))
}

// TestRecompressEveryCodecPair: from every codec a producer may send
// (snappy raw and xerial-framed) to every codec a topic may ask for, the
// result is a valid batch in the target codec holding the same record
// bytes under the same header.
func TestRecompressEveryCodecPair(t *testing.T) {
	records := rbtest.Cat(
		rbtest.Record(0, []byte("k0"), bytes.Repeat([]byte("value zero "), 30)),
		rbtest.Record(1, nil, []byte("v1"), kmsg.Header{Key: "h", Value: []byte("x")}),
		rbtest.Record(2, []byte("k2"), nil),
	)
	sources := append([]rbtest.Compressor{{Name: "none", Codec: 0}}, rbtest.Compressors...)
	l, _ := openLog(t, t.TempDir(), testConfig())
	for _, src := range sources {
		payload := records
		if src.Codec != int16(CodecNone) {
			payload = rbtest.Compress(src, records)
		}
		in := recompressInput(payload, 3, src.Codec)
		for to := CodecNone; to <= CodecZstd; to++ {
			t.Run(src.Name+"->"+to.String(), func(t *testing.T) {
				out, err := l.Recompress(in, to, 1<<20)
				if err != nil {
					t.Fatalf("Recompress: %v", err)
				}
				if got := recordbatch.BatchCodec(out); got != to {
					t.Fatalf("codec %v, want %v", got, to)
				}
				if Codec(src.Codec) == to && &out[0] != &in[0] {
					t.Fatalf("a batch already in %v was copied", to)
				}
				if _, err := recordbatch.Validate(out, DefaultMaxDecompressedBytes); err != nil {
					t.Fatalf("recompressed batch does not validate: %v", err)
				}
				got := out[recordbatch.HeaderSize:]
				if to != CodecNone {
					if got, err = recordbatch.DecompressAll(to, got, DefaultMaxDecompressedBytes); err != nil {
						t.Fatalf("decompressing the result: %v", err)
					}
				}
				if !bytes.Equal(got, records) {
					t.Fatalf("records changed in recompression")
				}
				// Everything but length, CRC and the codec bits is kept.
				want, have := bytes.Clone(in[:recordbatch.HeaderSize]), bytes.Clone(out[:recordbatch.HeaderSize])
				for _, b := range [][]byte{want, have} {
					copy(b[recordbatch.OffLength:recordbatch.OffLength+4], "LLLL")
					copy(b[recordbatch.OffCRC:recordbatch.OffCRC+4], "CCCC")
					binary.BigEndian.PutUint16(b[recordbatch.OffAttributes:], binary.BigEndian.Uint16(b[recordbatch.OffAttributes:])&^7)
				}
				if !bytes.Equal(want, have) {
					t.Fatalf("header changed:\n in  %x\n out %x", want, have)
				}
			})
		}
	}
}

// TestRecompressRefusals: a damaged batch is refused, not given a fresh
// CRC; records that do not decompress are refused as corrupt; a batch
// that grows past the caller's size limit is refused as too large.
func TestRecompressRefusals(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	good := makeBatch(batchOpts{records: 5, valueSize: 100})

	damaged := bytes.Clone(good)
	damaged[len(damaged)-3] ^= 0xff
	if _, err := l.Recompress(damaged, CodecGzip, 1<<20); !errors.Is(err, ErrCorruptBatch) {
		t.Errorf("damaged batch: %v, want ErrCorruptBatch", err)
	}

	garbage := rbtest.Batch(bytes.Repeat([]byte{0x5a, 0xa5, 0x33}, 40), 1, int16(CodecGzip))
	if _, err := l.Recompress(garbage, CodecNone, 1<<20); !errors.Is(err, ErrCorruptBatch) {
		t.Errorf("gzip payload that is not gzip: %v, want ErrCorruptBatch", err)
	}

	zeros := rbtest.Record(0, nil, make([]byte, 256<<10))
	small := rbtest.Batch(rbtest.Compress(rbtest.Compressors[0], zeros), 1, int16(CodecGzip))
	if _, err := l.Recompress(small, CodecNone, 64<<10); !errors.Is(err, ErrBatchTooLarge) {
		t.Errorf("256 KiB of zeros uncompressed under a 64 KiB limit: %v, want ErrBatchTooLarge", err)
	}
	if _, err := l.Recompress(small, CodecNone, 1<<20); err != nil {
		t.Errorf("the same batch under a 1 MiB limit: %v", err)
	}
}

// TestAppendBatchesIn: the log stores batches re-encoded, validates them
// as they were sent (a lying record is refused whatever the codec), leaves
// nothing behind when one batch of a call is refused, and recognises an
// idempotent producer's retry of a re-encoded batch.
func TestAppendBatchesIn(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	sent := [][]byte{makeBatch(batchOpts{records: 4, pid: 9, seq: 0}), makeBatch(batchOpts{records: 2, pid: 9, seq: 4})}
	kept := [][]byte{sent[0], sent[1]}
	res, err := l.AppendBatchesIn(sent, CodecZstd, 1<<20)
	if err != nil || res.BaseOffset != 0 || res.LastOffset != 5 {
		t.Fatalf("AppendBatchesIn: %+v %v", res, err)
	}
	if &sent[0][0] != &kept[0][0] || &sent[1][0] != &kept[1][0] {
		t.Fatal("AppendBatchesIn replaced batches in the caller's slice")
	}
	mustFlush(t, l)
	s, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	stored := readAll(t, s)
	for pos := 0; pos < len(stored); {
		if c := recordbatch.BatchCodec(stored[pos:]); c != CodecZstd {
			t.Fatalf("batch at byte %d stored as %v, want zstd", pos, c)
		}
		pos += recordbatch.LengthPrefix + int(binary.BigEndian.Uint32(stored[pos+recordbatch.OffLength:]))
	}

	retry, err := l.AppendBatchesIn([][]byte{makeBatch(batchOpts{records: 2, pid: 9, seq: 4})}, CodecZstd, 1<<20)
	if err != nil || !retry.Duplicate || retry.BaseOffset != 4 {
		t.Fatalf("retry of the second batch: %+v %v, want a duplicate at offset 4", retry, err)
	}

	lying := rbtest.Batch(rbtest.Record(7, nil, []byte("v")), 1, int16(CodecNone)) // offset delta 7 in a 1-record batch
	big := rbtest.Batch(rbtest.Compress(rbtest.Compressors[0], rbtest.Record(0, nil, make([]byte, 256<<10))), 1, int16(CodecGzip))
	for _, tc := range []struct {
		name  string
		batch []byte
		want  error
	}{
		{"a lying record", lying, ErrInvalidRecord},
		{"a batch growing past the limit", big, ErrBatchTooLarge},
	} {
		_, err := l.AppendBatchesIn([][]byte{makeBatch(batchOpts{}), tc.batch}, CodecNone, 64<<10)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if l.LogEndOffset() != 6 {
			t.Fatalf("%s: log end offset %d, want 6: the call's first batch was written", tc.name, l.LogEndOffset())
		}
	}
}

// BenchmarkRecompress is the CPU a topic codec adds per batch of 50
// 200-byte records sent uncompressed.
func BenchmarkRecompress(b *testing.B) {
	l, _ := openLog(b, b.TempDir(), testConfig())
	batch := makeBatch(batchOpts{records: 50, valueSize: 200})
	for to := CodecNone; to <= CodecZstd; to++ {
		b.Run(to.String(), func(b *testing.B) {
			b.SetBytes(int64(len(batch)))
			for b.Loop() {
				if _, err := l.Recompress(batch, to, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzAppendBatchesIn: whatever bytes arrive, a topic codec never makes
// the log accept what it would refuse as sent, and what it accepts holds
// the records as sent, in the topic's codec.
func FuzzAppendBatchesIn(f *testing.F) {
	records := rbtest.Cat(rbtest.Record(0, []byte("key"), []byte("value")), rbtest.Record(1, nil, nil), rbtest.Record(2, []byte{}, []byte("x")))
	f.Add(rbtest.Batch(records, 3, int16(CodecNone)), true, uint8(CodecGzip))
	f.Add(rbtest.Batch(rbtest.Record(7, nil, []byte("v")), 1, int16(CodecNone)), true, uint8(CodecZstd))
	for _, c := range rbtest.Compressors {
		f.Add(rbtest.Batch(rbtest.Compress(c, records), 3, c.Codec), true, uint8(CodecNone))
		f.Add(rbtest.Batch(rbtest.Compress(c, records), 3, c.Codec), false, uint8(CodecLZ4))
	}
	const limit = 1 << 20 // keeps a mutated bomb cheap
	f.Fuzz(func(t *testing.T, data []byte, fix bool, codec uint8) {
		to := Codec(codec % 5)
		if fix && len(data) >= recordbatch.HeaderSize {
			data = rbtest.FixBatch(bytes.Clone(data))
		}
		_, asSent := recordbatch.Validate(data, limit)
		cfg := testConfig()
		cfg.MaxDecompressedBytes = limit
		l, _ := openLog(t, t.TempDir(), cfg)
		sent := bytes.Clone(data)
		_, err := l.AppendBatchesIn([][]byte{data}, to, 4*limit)
		if asSent != nil {
			if err == nil {
				t.Fatalf("refused as sent (%v) but accepted re-encoded as %v", asSent, to)
			}
			return
		}
		if err != nil {
			t.Fatalf("accepted as sent but refused re-encoded as %v: %v", to, err)
		}
		mustFlush(t, l)
		s, err := l.Read(0, 8*limit)
		if err != nil {
			t.Fatal(err)
		}
		stored := readAll(t, s)
		if recordbatch.BatchCodec(stored) != to {
			t.Fatalf("stored as %v, want %v", recordbatch.BatchCodec(stored), to)
		}
		recordsOf := func(b []byte) []byte {
			r := b[recordbatch.HeaderSize:]
			if c := recordbatch.BatchCodec(b); c != CodecNone {
				var err error
				if r, err = recordbatch.DecompressAll(c, r, limit); err != nil {
					t.Fatalf("decompressing %v records: %v", c, err)
				}
			}
			return r
		}
		if !bytes.Equal(recordsOf(stored), recordsOf(sent)) {
			t.Fatal("records changed in re-encoding")
		}
	})
}
