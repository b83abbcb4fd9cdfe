package recordbatch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A marker is a valid batch that Kafka's clients read as the control
// record it is, and ControlType reads its type back.
func TestMarkerBatch(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b := MarkerBatch(42, 3, commit, 7, 1234)
		h, err := Validate(b, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if !h.Control() || !h.Transactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.RecordCount != 1 {
			t.Fatalf("header %+v", h)
		}
		typ, err := ControlType(b)
		want := int16(ControlAbort)
		if commit {
			want = ControlCommit
		}
		if err != nil || typ != want {
			t.Fatalf("ControlType = %d, %v; want %d", typ, err, want)
		}
		if typ, coord, err := ControlRecord(b); err != nil || typ != want || coord != 7 {
			t.Fatalf("ControlRecord = %d, %d, %v; want %d, coordinator epoch 7", typ, coord, err, want)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(rb.Records); err != nil {
			t.Fatal(err)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(rec.Key); err != nil || int16(key.Type) != want {
			t.Fatalf("kmsg reads the control key %x as type %v (%v), want %d", rec.Key, key.Type, err, want)
		}
		var val kmsg.EndTxnMarker
		if err := val.ReadFrom(rec.Value); err != nil || val.CoordinatorEpoch != 7 {
			t.Fatalf("kmsg reads the control value %x as %+v (%v), want coordinator epoch 7", rec.Value, val, err)
		}
	}
	b := MarkerBatch(1, 0, true, 0, 0)
	b[len(b)-9] = 9 // the low byte of the key's type: neither commit nor abort
	if _, err := ControlType(b); err == nil {
		t.Fatal("a control record of unknown type was read")
	}
}

// FuzzControlType: a marker's record is read from segment bytes during
// recovery's replay, before any CRC check; it never panics.
func FuzzControlType(f *testing.F) {
	f.Add(MarkerBatch(1, 2, true, 3, 4))
	f.Add(MarkerBatch(1, 2, false, 3, 4)[:HeaderSize+3])
	f.Fuzz(func(t *testing.T, b []byte) {
		if typ, _, err := ControlRecord(b); err == nil && typ != ControlAbort && typ != ControlCommit {
			t.Fatalf("type %d accepted", typ)
		}
	})
}
