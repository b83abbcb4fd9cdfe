package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
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
	return fixBatch(rb.AppendTo(nil))
}

// TestRecompressEveryCodecPair: from every codec a producer may send
// (snappy raw and xerial-framed) to every codec a topic may ask for, the
// result is a valid batch in the target codec holding the same record
// bytes under the same header.
func TestRecompressEveryCodecPair(t *testing.T) {
	records := cat(
		encRecord(0, []byte("k0"), bytes.Repeat([]byte("value zero "), 30)),
		encRecord(1, nil, []byte("v1"), kmsg.Header{Key: "h", Value: []byte("x")}),
		encRecord(2, []byte("k2"), nil),
	)
	sources := append([]compressor{{name: "none", codec: codecNone}}, compressors...)
	l, _ := openLog(t, t.TempDir(), testConfig())
	for _, src := range sources {
		payload := records
		if src.codec != codecNone {
			payload = compress(src, records)
		}
		in := recompressInput(payload, 3, src.codec)
		for to := CodecNone; to <= CodecZstd; to++ {
			t.Run(src.name+"->"+to.String(), func(t *testing.T) {
				out, err := l.Recompress(in, to, 1<<20)
				if err != nil {
					t.Fatalf("Recompress: %v", err)
				}
				if got := BatchCodec(out); got != to {
					t.Fatalf("codec %v, want %v", got, to)
				}
				if Codec(src.codec) == to && &out[0] != &in[0] {
					t.Fatalf("a batch already in %v was copied", to)
				}
				if _, err := validateBatch(out, DefaultMaxDecompressedBytes); err != nil {
					t.Fatalf("recompressed batch does not validate: %v", err)
				}
				got := out[batchHeaderSize:]
				if to != CodecNone {
					if got, err = decompressAll(int(to), got, DefaultMaxDecompressedBytes); err != nil {
						t.Fatalf("decompressing the result: %v", err)
					}
				}
				if !bytes.Equal(got, records) {
					t.Fatalf("records changed in recompression")
				}
				// Everything but length, CRC and the codec bits is kept.
				want, have := bytes.Clone(in[:batchHeaderSize]), bytes.Clone(out[:batchHeaderSize])
				for _, b := range [][]byte{want, have} {
					copy(b[offLength:offLength+4], "LLLL")
					copy(b[offCRC:offCRC+4], "CCCC")
					binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])&^codecMask)
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

	garbage := batchOf(bytes.Repeat([]byte{0x5a, 0xa5, 0x33}, 40), 1, codecGzip)
	if _, err := l.Recompress(garbage, CodecNone, 1<<20); !errors.Is(err, ErrCorruptBatch) {
		t.Errorf("gzip payload that is not gzip: %v, want ErrCorruptBatch", err)
	}

	zeros := encRecord(0, nil, make([]byte, 256<<10))
	small := batchOf(compress(compressors[0], zeros), 1, codecGzip)
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
		if c := BatchCodec(stored[pos:]); c != CodecZstd {
			t.Fatalf("batch at byte %d stored as %v, want zstd", pos, c)
		}
		pos += lengthPrefix + int(binary.BigEndian.Uint32(stored[pos+offLength:]))
	}

	retry, err := l.AppendBatchesIn([][]byte{makeBatch(batchOpts{records: 2, pid: 9, seq: 4})}, CodecZstd, 1<<20)
	if err != nil || !retry.Duplicate || retry.BaseOffset != 4 {
		t.Fatalf("retry of the second batch: %+v %v, want a duplicate at offset 4", retry, err)
	}

	lying := batchOf(encRecord(7, nil, []byte("v")), 1, codecNone) // offset delta 7 in a 1-record batch
	big := batchOf(compress(compressors[0], encRecord(0, nil, make([]byte, 256<<10))), 1, codecGzip)
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
	records := cat(encRecord(0, []byte("key"), []byte("value")), encRecord(1, nil, nil), encRecord(2, []byte{}, []byte("x")))
	f.Add(batchOf(records, 3, codecNone), true, uint8(CodecGzip))
	f.Add(batchOf(encRecord(7, nil, []byte("v")), 1, codecNone), true, uint8(CodecZstd))
	for _, c := range compressors {
		f.Add(batchOf(compress(c, records), 3, c.codec), true, uint8(CodecNone))
		f.Add(batchOf(compress(c, records), 3, c.codec), false, uint8(CodecLZ4))
	}
	const limit = 1 << 20 // keeps a mutated bomb cheap
	f.Fuzz(func(t *testing.T, data []byte, fix bool, codec uint8) {
		to := Codec(codec % 5)
		if fix && len(data) >= batchHeaderSize {
			data = fixBatch(bytes.Clone(data))
		}
		_, asSent := validateBatch(data, limit)
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
		if BatchCodec(stored) != to {
			t.Fatalf("stored as %v, want %v", BatchCodec(stored), to)
		}
		recordsOf := func(b []byte) []byte {
			r := b[batchHeaderSize:]
			if c := BatchCodec(b); c != CodecNone {
				var err error
				if r, err = decompressAll(int(c), r, limit); err != nil {
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
