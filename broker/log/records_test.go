package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// vi is a zigzag varint, as records encode every integer but attributes.
func vi(v int64) []byte { return binary.AppendVarint(nil, v) }

// withLen prefixes a record body with its length.
func withLen(body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	return append(vi(int64(len(b))), b...)
}

// rawRecord is a record body field by field: attributes, timestamp delta,
// offset delta, null key, the value, and no headers.
func rawRecord(delta int64, value string) []byte {
	return withLen([]byte{0}, vi(0), vi(delta), vi(-1), vi(int64(len(value))), []byte(value), vi(0))
}

// encRecord encodes a record with kmsg, as a client would.
func encRecord(delta int32, key, value []byte, headers ...kmsg.Header) []byte {
	r := kmsg.Record{OffsetDelta: delta, Key: key, Value: value, Headers: headers}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	return r.AppendTo(nil)
}

// batchOf wraps already encoded (and possibly compressed) records in a
// batch whose header claims count records and the given codec, with a
// correct length and CRC: only the records can be wrong.
func batchOf(records []byte, count int32, codec int16) []byte {
	rb := kmsg.RecordBatch{
		Magic: 2, Attributes: codec, LastOffsetDelta: count - 1, FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: count, Records: records,
	}
	return fixBatch(rb.AppendTo(nil))
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestRecordValidation: a batch whose frame is sound is accepted only when
// its records are exactly what the header says.
func TestRecordValidation(t *testing.T) {
	hdr := kmsg.Header{Key: "trace", Value: []byte("abc")}
	tests := []struct {
		name    string
		records []byte
		count   int32
		want    error // nil: accepted
		index   int32 // the record a RecordError must name, when want is one
	}{
		{"one record", encRecord(0, nil, []byte("v")), 1, nil, 0},
		{"keys, null values and headers", cat(encRecord(0, []byte("k"), nil, hdr), encRecord(1, []byte{}, []byte("v"), hdr, hdr)), 2, nil, 0},
		{"empty key and value", cat(encRecord(0, []byte{}, []byte{})), 1, nil, 0},

		{"offset delta 7 in a one-record batch", encRecord(7, nil, []byte("v")), 1, ErrInvalidRecord, 0},
		{"offset deltas skip one", cat(encRecord(0, nil, []byte("a")), encRecord(2, nil, []byte("b"))), 2, ErrInvalidRecord, 1},
		{"offset deltas repeat", cat(encRecord(0, nil, []byte("a")), encRecord(0, nil, []byte("b"))), 2, ErrInvalidRecord, 1},
		{"negative offset delta", encRecord(-1, nil, []byte("v")), 1, ErrInvalidRecord, 0},
		{"count says 3, 2 records", cat(encRecord(0, nil, []byte("a")), encRecord(1, nil, []byte("b"))), 3, ErrInvalidRecord, 2},
		{"count says 1, 2 records", cat(encRecord(0, nil, []byte("a")), encRecord(1, nil, []byte("b"))), 1, ErrInvalidRecord, -1},
		{"record length past the end of the batch", cat(vi(200), encRecord(0, nil, []byte("v"))[1:]), 1, ErrInvalidRecord, 0},
		{"record length past the end of the batch, second record", cat(encRecord(0, nil, []byte("a")), vi(100), []byte{0, 0, 2}), 2, ErrInvalidRecord, 1},
		{"record length shorter than its fields", cat(vi(3), encRecord(0, nil, []byte("value"))[1:]), 1, ErrInvalidRecord, 0},
		{"record length longer than its fields", withLen([]byte{0}, vi(0), vi(0), vi(-1), vi(1), []byte("v"), vi(0), []byte{9, 9}), 1, ErrInvalidRecord, 0},
		{"negative record length", cat(vi(-5), encRecord(0, nil, []byte("v"))[1:]), 1, ErrInvalidRecord, 0},
		{"zero record length", cat(vi(0), vi(0)), 1, ErrInvalidRecord, 0},
		{"trailing garbage after the last record", cat(encRecord(0, nil, []byte("v")), []byte{0xde, 0xad}), 1, ErrInvalidRecord, -1},
		{"one trailing zero byte", cat(encRecord(0, nil, []byte("v")), []byte{0}), 1, ErrInvalidRecord, -1},
		{"key length -2", withLen([]byte{0}, vi(0), vi(0), vi(-2), vi(1), []byte("v"), vi(0)), 1, ErrInvalidRecord, 0},
		{"value length -7", withLen([]byte{0}, vi(0), vi(0), vi(-1), vi(-7), vi(0)), 1, ErrInvalidRecord, 0},
		{"value runs past the record", withLen([]byte{0}, vi(0), vi(0), vi(-1), vi(50), []byte("v"), vi(0)), 1, ErrInvalidRecord, 0},
		{"negative header count", withLen([]byte{0}, vi(0), vi(0), vi(-1), vi(1), []byte("v"), vi(-1)), 1, ErrInvalidRecord, 0},
		{"header count beyond the headers", withLen([]byte{0}, vi(0), vi(0), vi(-1), vi(1), []byte("v"), vi(3), vi(1), []byte("k"), vi(-1)), 1, ErrInvalidRecord, 0},
		{"null header key", withLen([]byte{0}, vi(0), vi(0), vi(-1), vi(1), []byte("v"), vi(1), vi(-1), vi(-1)), 1, ErrInvalidRecord, 0},
		{"header value length -3", withLen([]byte{0}, vi(0), vi(0), vi(-1), vi(1), []byte("v"), vi(1), vi(1), []byte("k"), vi(-3)), 1, ErrInvalidRecord, 0},
		{"offset delta varint too long", withLen([]byte{0}, vi(0), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, vi(-1), vi(-1), vi(0)), 1, ErrInvalidRecord, 0},
		{"offset delta beyond int32", withLen([]byte{0}, vi(0), vi(1<<33), vi(-1), vi(-1), vi(0)), 1, ErrInvalidRecord, 0},
		{"records cut inside a varint", []byte{0x80}, 1, ErrInvalidRecord, 0},
		{"field by field but offset 1", rawRecord(1, "x"), 1, ErrInvalidRecord, 0},
		{"field by field", rawRecord(0, "x"), 1, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := validateBatch(batchOf(tt.records, tt.count, 0), DefaultMaxDecompressedBytes)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused a valid batch: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			t.Logf("error text: %v", err)
			var rerr *RecordError
			switch {
			case tt.index < 0 && errors.As(err, &rerr):
				t.Fatalf("blamed record %d for bytes after the last record", rerr.Index)
			case tt.index >= 0 && !errors.As(err, &rerr):
				t.Fatalf("error names no record, want record %d", tt.index)
			case tt.index >= 0 && rerr.Index != tt.index:
				t.Fatalf("error names record %d, want %d", rerr.Index, tt.index)
			}
		})
	}
}

// TestAppendRefusesLyingRecords: a batch refused for its records leaves
// the log as it was.
func TestAppendRefusesLyingRecords(t *testing.T) {
	dir := t.TempDir()
	l, _ := openLog(t, dir, testConfig())
	mustAppend(t, l, makeBatch(batchOpts{records: 2}))
	size := fileSize(t, segmentFiles(t, dir)[0])
	if _, err := l.Append(batchOf(encRecord(7, nil, []byte("v")), 1, 0)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Append of a record with offset delta 7: %v, want ErrInvalidRecord", err)
	}
	if l.LogEndOffset() != 2 || fileSize(t, segmentFiles(t, dir)[0]) != size {
		t.Fatalf("the refused batch left a trace: LEO %d", l.LogEndOffset())
	}
}

// TestAppendBatchesAllOrNothing: when any batch of a call is refused, none
// is written, including batches before it and idempotent producer state.
func TestAppendBatchesAllOrNothing(t *testing.T) {
	bad := batchOf(encRecord(3, nil, []byte("v")), 1, 0)
	tests := []struct {
		name    string
		batches func() [][]byte
		want    error
	}{
		{"second batch has lying records", func() [][]byte { return [][]byte{makeBatch(batchOpts{records: 2}), bad} }, ErrInvalidRecord},
		{"third batch fails its CRC", func() [][]byte {
			c := makeBatch(batchOpts{})
			c[len(c)-1] ^= 1
			return [][]byte{makeBatch(batchOpts{}), makeBatch(batchOpts{}), c}
		}, ErrCorruptBatch},
		{"second batch skips a sequence", func() [][]byte {
			return [][]byte{makeBatch(batchOpts{records: 2, pid: 5, seq: 0}), makeBatch(batchOpts{pid: 5, seq: 3})}
		}, ErrOutOfOrderSequence},
		{"second batch from a stale epoch", func() [][]byte {
			return [][]byte{makeBatch(batchOpts{pid: 6, epoch: 2, seq: 0}), makeBatch(batchOpts{pid: 6, epoch: 1, seq: 1})}
		}, ErrInvalidProducerEpoch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openLog(t, dir, testConfig())
			_, err := l.AppendBatches(tt.batches())
			if !errors.Is(err, tt.want) {
				t.Fatalf("AppendBatches: %v, want %v", err, tt.want)
			}
			t.Logf("error text: %v", err)
			if l.LogEndOffset() != 0 || l.Size() != 0 {
				t.Fatalf("a refused call appended: LEO %d, size %d", l.LogEndOffset(), l.Size())
			}
			// Nothing of the refused call was remembered: a producer may
			// start again at sequence 0 of the same epoch.
			mustAppend(t, l, makeBatch(batchOpts{pid: 5, seq: 0}))
			mustAppend(t, l, makeBatch(batchOpts{pid: 6, epoch: 1, seq: 0}))
		})
	}
}

// TestAppendBatchesSequences: several batches of one producer in one call
// are checked in order against each other, duplicates included.
func TestAppendBatchesSequences(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, l, makeBatch(batchOpts{records: 2, pid: 7, seq: 0}))
	res, err := l.AppendBatches([][]byte{
		makeBatch(batchOpts{records: 2, pid: 7, seq: 0}), // a retry of the batch above
		makeBatch(batchOpts{records: 3, pid: 7, seq: 2}),
		makeBatch(batchOpts{records: 1, pid: 7, seq: 5}),
		makeBatch(batchOpts{records: 1, pid: 8, seq: 0}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 || res.LastOffset != 6 || res.Duplicate {
		t.Fatalf("result %+v, want offsets 0..6 (the retry answered with its original offsets), not a duplicate", res)
	}
	if l.LogEndOffset() != 7 {
		t.Fatalf("LEO %d, want 7: the retried batch must not be written again", l.LogEndOffset())
	}
	// The same call again is all duplicates, answered with the same offsets.
	res, err = l.AppendBatches([][]byte{
		makeBatch(batchOpts{records: 3, pid: 7, seq: 2}),
		makeBatch(batchOpts{records: 1, pid: 7, seq: 5}),
	})
	if err != nil || res.BaseOffset != 2 || res.LastOffset != 5 || !res.Duplicate {
		t.Fatalf("retried call: %+v, %v; want duplicates at 2..5", res, err)
	}
	if l.LogEndOffset() != 7 {
		t.Fatalf("LEO %d after a retried call, want 7", l.LogEndOffset())
	}
}
