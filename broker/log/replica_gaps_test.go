package log

import (
	"fmt"
	"os"
	"testing"
)

// A leader's log may jump over offsets it does not hold (quarantined
// damage no replica had, compaction); a follower copying it records the
// same gap, so that its own scans accept the jump. Before, the follower's
// next recovery read the jump as damage and quarantined the batch after
// it, and a clean restart found the segment inconsistent.
func TestAppendReplicaRecordsTheLeadersGaps(t *testing.T) {
	for _, restart := range []string{"crash", "clean"} {
		t.Run(restart, func(t *testing.T) {
			dir := t.TempDir()
			cfg := fixtureConfig()
			f, _ := openLog(t, dir, cfg)
			for _, base := range []int64{0, 2, 6, 8, 12, 14, 16} { // gaps [4, 6) and [10, 12)
				if _, err := f.AppendReplica([][]byte{fixtureBatchAt(base)}); err != nil {
					t.Fatalf("copying the batch at %d: %v", base, err)
				}
			}
			mustFlush(t, f)
			if restart == "crash" {
				crash(f)
				makeUncleanAfterCrash(t, dir)
			} else if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			l, rep := openLog(t, dir, cfg)
			if len(rep.Lost) != 0 || rep.TruncatedAt != -1 {
				t.Fatalf("reopened after a %s: %+v", restart, rep)
			}
			var got []int64
			for off := int64(0); off < l.LogEndOffset(); {
				s, err := l.Read(off, 1)
				if err != nil {
					t.Fatalf("Read(%d): %v", off, err)
				}
				h := batchesIn(t, readAll(t, s))[0]
				got = append(got, h.BaseOffset)
				off = h.NextOffset()
			}
			if fmt.Sprint(got) != "[0 2 6 8 12 14 16]" || l.LogEndOffset() != 18 {
				t.Fatalf("read batches %v, log end %d", got, l.LogEndOffset())
			}
			if r, err := Verify(dir); err != nil || r.Damaged() {
				t.Fatalf("verify: %+v %v", r, err)
			}
		})
	}
}

// makeUncleanAfterCrash removes the recovery checkpoint a crash left, so
// that every segment is scanned.
func makeUncleanAfterCrash(t *testing.T, dir string) {
	t.Helper()
	removeIfExists(t, dir+"/"+checkpointFile)
}

func removeIfExists(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}
