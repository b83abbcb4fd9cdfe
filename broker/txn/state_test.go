package txn

import (
	"bytes"
	"testing"
	"time"
)

// Placement is Kafka's: the Java String hash of the id, abs, modulo the
// partitions, so a Kafka tool computing where an id lives agrees.
func TestPartitionForIsKafkas(t *testing.T) {
	for _, c := range []struct {
		id   string
		want int32
	}{
		{"", 0},
		{"a", 97 % 50},
		{"hello", 99162322 % 50},       // "hello".hashCode()
		{"app-1", 93027205 % 50},       // "app-1".hashCode()
		{"polygenelubricants", 0},      // hashCode() is Integer.MIN_VALUE: Utils.abs gives 0
		{"é", 233 % 50},                // one UTF-16 unit
		{"𝄞", (55348*31 + 56606) % 50}, // a surrogate pair, two units
	} {
		if got := PartitionFor(c.id, 50); got != c.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", c.id, got, c.want)
		}
	}
}

// A state record reads back as written, pending offsets included.
func TestStateRecordRoundTrip(t *testing.T) {
	m := &meta{id: "app", producerID: 42, epoch: 7, timeoutMs: 60000, state: Ongoing,
		start: time.UnixMilli(1000), lastUpdate: time.UnixMilli(2000),
		partitions: map[TP]bool{{"b", 1}: true, {"a", 0}: true, {"a", 2}: true},
		groups:     map[string]bool{"g": true}}
	m.addPending("g", TP{"in", 3}, Offset{Offset: 99, LeaderEpoch: 4, Metadata: "md"})
	id, got, err := decodeRecord(encodeKey("app"), m.encodeValue())
	if err != nil || id != "app" {
		t.Fatalf("decode: %q %v", id, err)
	}
	if got.producerID != 42 || got.epoch != 7 || got.state != Ongoing || len(got.partitions) != 3 ||
		!got.groups["g"] || got.pending["g"][TP{"in", 3}] != (Offset{Offset: 99, LeaderEpoch: 4, Metadata: "md"}) ||
		!got.start.Equal(m.start) {
		t.Fatalf("decoded %+v", got)
	}
	if !bytes.Equal(got.encodeValue(), m.encodeValue()) {
		t.Fatal("re-encoding a decoded state gives other bytes")
	}
	if id, tomb, err := decodeRecord(encodeKey("gone"), nil); err != nil || id != "gone" || tomb != nil {
		t.Fatalf("tombstone: %q %v %v", id, tomb, err)
	}
}

// FuzzDecodeRecord: __transaction_state records are read back from disk
// and replicated from other brokers; decoding never panics and what it
// accepts is a state the coordinator can work with.
func FuzzDecodeRecord(f *testing.F) {
	m := &meta{id: "app", producerID: 1, state: PrepareCommit, partitions: map[TP]bool{{"t", 0}: true}, groups: map[string]bool{"g": true}}
	m.addPending("g", TP{"t", 0}, Offset{Offset: 5})
	f.Add(encodeKey("app"), m.encodeValue())
	f.Add(encodeKey("x"), []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		_, got, err := decodeRecord(key, value)
		if err != nil || got == nil {
			return
		}
		if got.state < Empty || got.state > Dead || got.producerID < 0 {
			t.Fatalf("accepted state %d, producer %d", got.state, got.producerID)
		}
		got.encodeValue()
	})
}
