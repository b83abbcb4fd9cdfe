package log

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// wantFenced checks that a marker for producer pid from coordinator epoch
// coord is refused as a fenced coordinator's.
func wantFenced(t *testing.T, l *Log, pid int64, coord int32) {
	t.Helper()
	if _, err := l.AppendMarker(pid, 0, false, coord); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("a marker from coordinator epoch %d after one from a newer coordinator: %v, want ErrCoordinatorFenced", coord, err)
	}
}

// A follower learns the coordinator epoch from the markers it replicates:
// once it leads, it refuses the markers of a coordinator older than the
// one whose marker the previous leader wrote, as that leader would have.
func TestFollowerLearnsTheCoordinatorEpochFromReplicatedMarkers(t *testing.T) {
	data := txnBatch(5, 0, 0, 1)
	marker := recordbatch.MarkerBatch(5, 0, true, 7, time.Now().UnixMilli())
	binary.BigEndian.PutUint64(marker[recordbatch.OffBaseOffset:], 1)
	f, _ := openLog(t, t.TempDir(), testConfig())
	if _, err := f.AppendReplica([][]byte{data, marker}); err != nil {
		t.Fatal(err)
	}
	wantFenced(t, f, 5, 6)
	if _, err := f.AppendMarker(5, 0, true, 7); err != nil {
		t.Fatalf("the current coordinator's marker: %v", err)
	}
}

// The coordinator epoch outlives a restart: kept in the producer snapshot
// of a clean close, replayed from the markers after a crash.
func TestCoordinatorEpochSurvivesRestart(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := map[bool]string{true: "clean", false: "crash"}[clean]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, _, err := Open(dir, testConfig(), quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, txnBatch(5, 0, 0, 1))
			if _, err := l.AppendMarker(5, 0, true, 7); err != nil {
				t.Fatal(err)
			}
			// Producer 9 is known here only by a marker (added to a
			// transaction that wrote nothing in this partition).
			if _, err := l.AppendMarker(9, 0, false, 4); err != nil {
				t.Fatal(err)
			}
			mustFlush(t, l)
			if clean {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				crash(l)
			}
			l, _ = openLog(t, dir, testConfig())
			wantFenced(t, l, 5, 6)
			wantFenced(t, l, 9, 3)
		})
	}
}

// A snapshot keeps a producer known only by its markers and the
// coordinator epoch of each; one written before version 3 still loads.
func TestProducerSnapshotKeepsCoordinatorEpochs(t *testing.T) {
	p := newProducers(100, quietLogger(), "")
	now := time.UnixMilli(1_700_000_000_000)
	h := recordbatch.Header{ProducerID: 5, BaseSequence: 0, RecordCount: 1}
	p.record(&h, 0, 0, now)
	p.marker(&recordbatch.Header{ProducerID: 5}, 7, now)
	p.marker(&recordbatch.Header{ProducerID: 9}, 4, now)
	b := encodeProducerSnapshot(&p, &openTxns{}, 3)
	q, err := decodeProducerSnapshot(b, 3, newProducers(100, quietLogger(), ""), &openTxns{})
	if err != nil {
		t.Fatalf("a snapshot with a producer known only by its marker: %v", err)
	}
	for pid, want := range map[int64]int32{5: 7, 9: 4} {
		if e := q.lookup(pid); e == nil || e.coordEpoch != want {
			t.Fatalf("producer %d decoded as %+v, want coordinator epoch %d", pid, e, want)
		}
	}

	// Version 2: producer 5 with one batch, no open transaction.
	v2 := []byte{2}
	v2 = binary.BigEndian.AppendUint64(v2, 3)
	v2 = binary.BigEndian.AppendUint32(v2, 1)
	v2 = binary.BigEndian.AppendUint64(v2, 5)
	v2 = binary.BigEndian.AppendUint16(v2, 0)
	v2 = binary.BigEndian.AppendUint64(v2, uint64(now.UnixMilli()))
	v2 = append(v2, 1)
	v2 = binary.BigEndian.AppendUint32(v2, 0)
	v2 = binary.BigEndian.AppendUint32(v2, 1)
	v2 = binary.BigEndian.AppendUint64(v2, 0)
	v2 = binary.BigEndian.AppendUint32(v2, 0)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(v2)))
	frame = binary.BigEndian.AppendUint32(frame, crc32.Checksum(v2, snapshotCRC))
	q, err = decodeProducerSnapshot(append(frame, v2...), 3, newProducers(100, quietLogger(), ""), &openTxns{})
	if err != nil {
		t.Fatalf("a version 2 snapshot: %v", err)
	}
	if e := q.lookup(5); e == nil || e.n != 1 || e.coordEpoch != 0 {
		t.Fatalf("producer 5 of a version 2 snapshot decoded as %+v", e)
	}
}
