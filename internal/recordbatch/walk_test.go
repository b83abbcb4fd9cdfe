package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
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
		{"one record", rbtest.Record(0, nil, []byte("v")), 1, nil, 0},
		{"keys, null values and headers", rbtest.Cat(rbtest.Record(0, []byte("k"), nil, hdr), rbtest.Record(1, []byte{}, []byte("v"), hdr, hdr)), 2, nil, 0},
		{"empty key and value", rbtest.Cat(rbtest.Record(0, []byte{}, []byte{})), 1, nil, 0},

		{"offset delta 7 in a one-record batch", rbtest.Record(7, nil, []byte("v")), 1, ErrInvalidRecord, 0},
		{"offset deltas skip one", rbtest.Cat(rbtest.Record(0, nil, []byte("a")), rbtest.Record(2, nil, []byte("b"))), 2, ErrInvalidRecord, 1},
		{"offset deltas repeat", rbtest.Cat(rbtest.Record(0, nil, []byte("a")), rbtest.Record(0, nil, []byte("b"))), 2, ErrInvalidRecord, 1},
		{"negative offset delta", rbtest.Record(-1, nil, []byte("v")), 1, ErrInvalidRecord, 0},
		{"count says 3, 2 records", rbtest.Cat(rbtest.Record(0, nil, []byte("a")), rbtest.Record(1, nil, []byte("b"))), 3, ErrInvalidRecord, 2},
		{"count says 1, 2 records", rbtest.Cat(rbtest.Record(0, nil, []byte("a")), rbtest.Record(1, nil, []byte("b"))), 1, ErrInvalidRecord, -1},
		{"record length past the end of the batch", rbtest.Cat(vi(200), rbtest.Record(0, nil, []byte("v"))[1:]), 1, ErrInvalidRecord, 0},
		{"record length past the end of the batch, second record", rbtest.Cat(rbtest.Record(0, nil, []byte("a")), vi(100), []byte{0, 0, 2}), 2, ErrInvalidRecord, 1},
		{"record length shorter than its fields", rbtest.Cat(vi(3), rbtest.Record(0, nil, []byte("value"))[1:]), 1, ErrInvalidRecord, 0},
		{"record length longer than its fields", withLen([]byte{0}, vi(0), vi(0), vi(-1), vi(1), []byte("v"), vi(0), []byte{9, 9}), 1, ErrInvalidRecord, 0},
		{"negative record length", rbtest.Cat(vi(-5), rbtest.Record(0, nil, []byte("v"))[1:]), 1, ErrInvalidRecord, 0},
		{"zero record length", rbtest.Cat(vi(0), vi(0)), 1, ErrInvalidRecord, 0},
		{"trailing garbage after the last record", rbtest.Cat(rbtest.Record(0, nil, []byte("v")), []byte{0xde, 0xad}), 1, ErrInvalidRecord, -1},
		{"one trailing zero byte", rbtest.Cat(rbtest.Record(0, nil, []byte("v")), []byte{0}), 1, ErrInvalidRecord, -1},
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
			_, err := Validate(rbtest.Batch(tt.records, tt.count, 0), testLimit)
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

// testLimit is the broker's default decompression limit per batch.
const testLimit = 64 << 20

// FuzzFastWalk checks that the fast walker, the record walker and Parse
// agree on every input: fastWalk accepts exactly the records the walker
// accepts (the walker then explains a refusal), and Parse reads exactly
// those.
func FuzzFastWalk(f *testing.F) {
	hdr := kmsg.Header{Key: "h", Value: []byte("v")}
	f.Add(rbtest.Cat(rbtest.Record(0, []byte("key"), []byte("value"), hdr), rbtest.Record(1, nil, nil), rbtest.Record(2, []byte{}, []byte("x"), hdr, hdr)), int32(3))
	f.Add(rbtest.Record(7, nil, []byte("v")), int32(1))
	f.Add(rawRecord(0, "x"), int32(1))
	f.Add([]byte{}, int32(0))
	f.Fuzz(func(t *testing.T, records []byte, count int32) {
		w := recordWalker{buf: records}
		fast := fastWalk(records, count)
		if slow := w.walk(count); fast != (slow == nil) {
			t.Fatalf("the fast walker and the record walker disagree: fast %v, walker %v", fast, slow)
		}
		// Parse reads records the same way: count of them, numbered
		// 0..count-1, using every byte.
		parsed, pos := true, 0
		var r Fields
		for i := int32(0); i < count && parsed; i++ {
			parsed = r.Parse(records, pos) && r.OffsetDelta == int64(i)
			pos = r.End
		}
		if parsed = parsed && pos == len(records); parsed != fast {
			t.Fatalf("Parse and the fast walker disagree: Parse %v, fast %v", parsed, fast)
		}
	})
}
