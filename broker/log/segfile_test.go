package log

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// descriptorsUnder counts this process's open descriptors of files in dir.
func descriptorsUnder(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			n++
		}
	}
	return n
}

// A log that rolled a segment per batch (as segment.ms=1 did) holds at
// most maxOpenSealedSegments sealed-segment descriptors, however many
// segments it has, through appends, reads from every segment, and a
// reopen; before, it held one per segment (1,530 for 1,500) until the process
// ran out and other partitions failed.
func TestSegmentStormHoldsFewDescriptors(t *testing.T) {
	const batches = 300
	const bound = 16 + 3 // plus the active segment's reader and writers
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l, _ := openLog(t, dir, cfg)
	for i := range batches {
		mustAppend(t, l, makeBatch(batchOpts{valueSize: 600}))
		if i%50 == 49 {
			mustFlush(t, l)
		}
	}
	mustFlush(t, l)
	if n := len(segmentFiles(t, dir)); n < batches {
		t.Fatalf("%d segments, want one per batch (%d)", n, batches)
	}
	n := descriptorsUnder(t, dir)
	t.Logf("%d segments, %d descriptors", batches, n)
	if n > bound {
		t.Fatalf("after %d rolls the log holds %d descriptors, want at most %d", batches, n, bound)
	}
	// Every segment is read again (each reopened), three Slices held at
	// once at places far apart.
	var held []Slice
	for off := int64(0); off < batches; off++ {
		s, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("reading offset %d: %v", off, err)
		}
		b := readAllKeep(t, s)
		if hs := batchesIn(t, b); len(hs) != 1 || hs[0].BaseOffset != off {
			t.Fatalf("offset %d: read %d batches starting at %v", off, len(hs), hs)
		}
		if off%100 == 0 {
			held = append(held, s)
		} else {
			s.Release()
		}
	}
	for _, s := range held {
		if got := readAllKeep(t, s); len(got) == 0 {
			t.Fatal("a held Slice reads nothing after its descriptor's neighbours were closed")
		}
		s.Release()
	}
	if n := descriptorsUnder(t, dir); n > bound {
		t.Fatalf("after reading every segment the log holds %d descriptors, want at most %d", n, bound)
	}
	l.Close()
	l2, _ := openLog(t, dir, cfg)
	if n := descriptorsUnder(t, dir); n > bound {
		t.Fatalf("after a reopen the log holds %d descriptors, want at most %d", n, bound)
	}
	if s, err := l2.Read(3, 1<<20); err != nil || len(batchesIn(t, readAll(t, s))) != 1 {
		t.Fatalf("reading after the reopen: %v", err)
	}
}

// readAllKeep is readAll without releasing the Slice.
func readAllKeep(t *testing.T, s Slice) []byte {
	t.Helper()
	b := make([]byte, s.Size)
	if _, err := s.File.ReadAt(b, s.Pos); err != nil {
		t.Fatalf("reading slice: %v", err)
	}
	return b
}

// A Slice handed out before its segment was deleted (DeleteRecords) keeps
// reading the file, however many other segments are opened and closed
// meanwhile: the log's bound applies to segments it still holds, never to
// a descriptor a reader holds alone.
func TestSliceOutlivesItsDeletedSegment(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l, _ := openLog(t, dir, cfg)
	for range 60 {
		mustAppend(t, l, makeBatch(batchOpts{valueSize: 600}))
	}
	mustFlush(t, l)
	held, err := l.Read(2, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if _, err := l.DeleteRecordsBefore(10); err != nil {
		t.Fatal(err)
	}
	for off := int64(10); off < 60; off++ { // opens and closes the others
		s, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("reading offset %d: %v", off, err)
		}
		readAll(t, s)
	}
	if hs := batchesIn(t, readAllKeep(t, held)); len(hs) != 1 || hs[0].BaseOffset != 2 {
		t.Fatalf("the held Slice of a deleted segment reads %v", hs)
	}
}
