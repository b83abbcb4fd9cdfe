package log

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// A follower's log holds each batch at the offset its leader gave it, and
// the bytes it serves are the leader's bytes.
func TestAppendReplicaKeepsTheLeadersOffsets(t *testing.T) {
	leader, _ := openLog(t, t.TempDir(), testConfig())
	for i := range 4 {
		mustAppend(t, leader, makeBatch(batchOpts{records: i + 1}))
	}
	mustFlush(t, leader)
	s, err := leader.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, s.Size)
	if _, err := s.File.ReadAt(raw, s.Pos); err != nil {
		t.Fatal(err)
	}
	s.Release()

	follower, _ := openLog(t, t.TempDir(), testConfig())
	batches := splitBatches(raw)
	// The first two arrive, then all four again (a refetch): the repeats
	// are skipped.
	if res, err := follower.AppendReplica(batches[:2]); err != nil || res.BaseOffset != 0 || res.LastOffset != 2 {
		t.Fatalf("first append: %+v %v", res, err)
	}
	if res, err := follower.AppendReplica(batches); err != nil || res.BaseOffset != 3 || res.LastOffset != 9 {
		t.Fatalf("second append: %+v %v", res, err)
	}
	mustFlush(t, follower)
	if follower.LogEndOffset() != leader.LogEndOffset() || follower.HighWatermark() != 10 {
		t.Fatalf("follower end %d hw %d, leader end %d", follower.LogEndOffset(), follower.HighWatermark(), leader.LogEndOffset())
	}
	fs, err := follower.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Release()
	got, _ := io.ReadAll(io.NewSectionReader(fs.File, fs.Pos, fs.Size))
	if !bytes.Equal(got, raw) {
		t.Fatal("the follower's log differs from the leader's")
	}
	// A batch that straddles the log end means the logs diverged.
	shifted := bytes.Clone(batches[3])
	putBase(shifted, 8)
	if _, err := follower.AppendReplica([][]byte{shifted}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("overlapping batch: %v, want ErrOffsetOutOfRange", err)
	}
}

// ReadUpTo serves whole batches below end and nothing from end on.
func TestReadUpToStopsAtEnd(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	for range 5 {
		mustAppend(t, l, makeBatch(batchOpts{records: 2}))
	}
	mustFlush(t, l)
	for _, c := range []struct{ offset, end, wantBatches int64 }{
		{0, 6, 3}, {1, 6, 3}, {4, 6, 1}, {6, 6, 0}, {8, 6, 0}, {0, 10, 5}, {0, 0, 0},
	} {
		s, err := l.ReadUpTo(c.offset, 1<<20, c.end)
		if err != nil {
			t.Fatalf("ReadUpTo(%d, end %d): %v", c.offset, c.end, err)
		}
		n := int64(0)
		if s.Size > 0 {
			raw := make([]byte, s.Size)
			s.File.ReadAt(raw, s.Pos)
			n = int64(len(splitBatches(raw)))
		}
		s.Release()
		if n != c.wantBatches {
			t.Errorf("ReadUpTo(%d, end %d): %d batches, want %d", c.offset, c.end, n, c.wantBatches)
		}
	}
}

func splitBatches(raw []byte) [][]byte {
	var out [][]byte
	for len(raw) > 0 {
		h := recordbatch.ParseHeader(raw)
		out = append(out, bytes.Clone(raw[:h.Size()]))
		raw = raw[h.Size():]
	}
	return out
}

func putBase(b []byte, base int64) {
	for i := range 8 {
		b[i] = byte(base >> (56 - 8*i))
	}
}

// ReadToEnd serves a follower what was appended but not flushed yet,
// while Read keeps to the flushed end; Appended wakes a waiter at the
// next append.
func TestReadToEndServesUnflushedBatches(t *testing.T) {
	l, _ := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, l, makeBatch(batchOpts{records: 2}))
	mustFlush(t, l)
	appended := l.Appended()
	select {
	case <-appended:
		t.Fatal("Appended closed before any append")
	default:
	}
	mustAppend(t, l, makeBatch(batchOpts{records: 3})) // offsets 2-4, unflushed
	<-appended
	if l.HighWatermark() != 2 || l.LogEndOffset() != 5 {
		t.Fatalf("hw %d, end %d; want 2 and 5", l.HighWatermark(), l.LogEndOffset())
	}
	if s, err := l.Read(2, 1<<20); err != nil || s.Size != 0 {
		t.Fatalf("Read past the flushed end: %d bytes, %v", s.Size, err)
	}
	s, err := l.ReadToEnd(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, s.Size)
	if _, err := s.File.ReadAt(raw, s.Pos); err != nil {
		t.Fatal(err)
	}
	s.Release()
	if batches := splitBatches(raw); len(batches) != 2 {
		t.Fatalf("ReadToEnd from 0 gave %d batches, want both", len(batches))
	}
	if s, err := l.ReadToEnd(5, 1<<20); err != nil || s.Size != 0 {
		t.Fatalf("ReadToEnd at the log end: %d bytes, %v", s.Size, err)
	}
	if _, err := l.ReadToEnd(6, 1<<20); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("ReadToEnd past the log end: %v, want ErrOffsetOutOfRange", err)
	}
}
