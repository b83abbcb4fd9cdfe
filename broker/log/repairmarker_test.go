package log

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// repairConfig is the fixture's config with the hook a replicated
// partition's broker sets: record where to fetch again before a loss.
func repairConfig(fsys FS, dir string) Config {
	cfg := fixtureConfig()
	cfg.FS = fsys
	cfg.BeforeLoss = func(first int64) error { return RecordRepairFrom(fsys, dir, first) }
	return cfg
}

// fixtureBatchAt is the fixture's batch holding offsets [base, base+2), as
// its leader would send it to a follower.
func fixtureBatchAt(base int64) []byte {
	b := fixtureBatch()
	binary.BigEndian.PutUint64(b[recordbatch.OffBaseOffset:], uint64(base)) // outside the CRC
	return b
}

// Recovery that finds a damaged batch records where to fetch again before
// it quarantines; cutting back then leaves the log ending at the damaged
// batch, ready to copy everything from there from the leader.
func TestRecoveryRecordsWhereToRepairFrom(t *testing.T) {
	dir := writeFixture(t)
	damageFixture(t, dir)
	makeUnclean(t, dir, false)
	l, rep := openLog(t, dir, repairConfig(OSFS{}, dir))
	if len(rep.Lost) != 1 || rep.Lost[0].FirstOffset != 8 {
		t.Fatalf("recovery lost %v, want offsets from 8", rep.Lost)
	}
	if off, ok, err := l.RepairFrom(); err != nil || !ok || off != 8 {
		t.Fatalf("RepairFrom = %d, %v, %v; want 8", off, ok, err)
	}
	// log verify says the replica lacks what it must fetch again.
	if r, err := Verify(dir); err != nil || !r.Damaged() || len(r.Partitions[0].Problems) != 1 ||
		r.Partitions[0].Problems[0].File != RepairMarkerFile || r.Partitions[0].Problems[0].FirstOffset != 8 {
		t.Fatalf("verify with a repair pending: %+v, %v", r, err)
	}
	checkRepairedFrom8(t, l)
	if r, err := Verify(dir); err != nil || r.Damaged() {
		t.Fatalf("verify after the repair: %+v, %v", r, err)
	}
}

// checkRepairedFrom8 cuts the fixture's log back for repair, checks what
// is left, and copies offsets 8 to 21 back as a follower would.
func checkRepairedFrom8(t *testing.T, l *Log) {
	t.Helper()
	// ok false: a crash came after the marker was removed, the cut made
	off, ok, err := l.CutBackForRepair()
	if err != nil || ok && off != 8 || !ok && l.LogEndOffset() != 8 {
		t.Fatalf("CutBackForRepair = %d, %v, %v with the log ending at %d; want the log cut back to 8", off, ok, err, l.LogEndOffset())
	}
	if _, ok, err := l.RepairFrom(); ok || err != nil {
		t.Fatalf("the marker is still there (%v) after the cut back", err)
	}
	if _, ok, err := l.CutBackForRepair(); ok || err != nil {
		t.Fatalf("a second cut back did something: %v, %v", ok, err)
	}
	checkRecovered(t, l, 8, 2, true)
	for base := int64(8); base < 22; base += 2 {
		if _, err := l.AppendReplica([][]byte{fixtureBatchAt(base)}); err != nil {
			t.Fatalf("copying the batch at %d back: %v", base, err)
		}
	}
	mustFlush(t, l)
	l.mu.RLock()
	for _, s := range l.segs {
		if len(s.gaps) > 0 {
			t.Errorf("segment %d still records gaps %v", s.base, s.gaps)
		}
	}
	segments := len(l.segs) // a truncated active segment rolls at its next append (segment age unknown)
	l.mu.RUnlock()
	checkRecovered(t, l, 22, segments, true)
}

// The power is cut at each file operation of recovery, the marker's write,
// the quarantine and the cut back; after each, the next start (with the
// same hook) and cut back leave the log ending at the damaged batch, no
// marker behind, and every batch before it intact.
func TestRepairSurvivesPowerLossAtEveryStep(t *testing.T) {
	template := writeFixture(t)
	damageFixture(t, template)
	makeUnclean(t, template, false)
	steps := 0
	for n := 0; ; n++ {
		if n > 500 {
			t.Fatal("the repair never ends without a crash")
		}
		dir := filepath.Join(t.TempDir(), "p-0")
		if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
			t.Fatal(err)
		}
		cfs := newCrashFS(t, dir)
		cfs.CrashAfter(n)
		if l, _, err := Open(dir, repairConfig(cfs, dir), quietLogger()); err == nil {
			l.CutBackForRepair()
			l.Close()
		}
		if !cfs.Crashed() {
			steps = n
			break
		}
		if err := cfs.PowerLoss(); err != nil {
			t.Fatal(err)
		}
		l, _ := openLog(t, dir, repairConfig(OSFS{}, dir))
		checkRepairedFrom8(t, l)
	}
	t.Logf("power cut at each of %d file operations", steps)
}

// A damaged marker is refused with an error naming it and saying what to
// do; no new loss is recorded over it, and recovery quarantines nothing
// while it is there (the lost offsets would otherwise be forgotten).
func TestRepairMarkerRefusesGarbage(t *testing.T) {
	cases := map[string]string{
		"empty":            "",
		"negative":         "-5\n",
		"trailing garbage": "12abc\n",
		"no newline":       "12",
		"two lines":        "12\n13\n",
		"overflowing":      "99999999999999999999\n",
		"binary":           "\x00\x01\xff\xfe\n",
		"huge":             strings.Repeat("1", 4096) + "\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			dir := writeFixture(t)
			damageFixture(t, dir)
			makeUnclean(t, dir, false)
			marker := filepath.Join(dir, RepairMarkerFile)
			if err := os.WriteFile(marker, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ReadRepairFrom(OSFS{}, dir)
			if !errors.Is(err, ErrBadRepairMarker) || !strings.Contains(err.Error(), marker) || !strings.Contains(err.Error(), "write that offset") {
				t.Fatalf("ReadRepairFrom: %v; want ErrBadRepairMarker naming %s and what to do", err, marker)
			}
			if err := RecordRepairFrom(OSFS{}, dir, 3); !errors.Is(err, ErrBadRepairMarker) {
				t.Fatalf("RecordRepairFrom over a damaged marker: %v", err)
			}
			_, _, err = Open(dir, repairConfig(OSFS{}, dir), quietLogger())
			if !errors.Is(err, ErrBadRepairMarker) {
				t.Fatalf("Open with damage to quarantine and a damaged marker: %v", err)
			}
			if got, _ := os.ReadFile(marker); string(got) != content {
				t.Fatalf("the marker was changed to %q", got)
			}
			if q, _ := filepath.Glob(filepath.Join(dir, "*.quarantine-*")); len(q) != 0 {
				t.Fatalf("quarantined %v over a damaged marker", q)
			}
		})
	}
}

// Of two losses the lower offset is kept: cutting back there repairs both.
func TestRepairMarkerKeepsTheLowerOffset(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ record, want int64 }{{9, 9}, {12, 9}, {3, 3}, {0, 0}} {
		if err := RecordRepairFrom(OSFS{}, dir, c.record); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := ReadRepairFrom(OSFS{}, dir); err != nil || !ok || got != c.want {
			t.Fatalf("after recording %d: %d, %v, %v; want %d", c.record, got, ok, err, c.want)
		}
	}
	if err := RecordRepairFrom(OSFS{}, dir, -1); err == nil {
		t.Fatal("a negative offset was recorded")
	}
}

// The marker is read as hostile input: whatever its bytes, it is refused
// or it is exactly what RecordRepairFrom writes for the offset it gives.
func FuzzRepairMarker(f *testing.F) {
	for _, s := range []string{"0\n", "8\n", "9223372036854775807\n", "9223372036854775808\n", "", "-1\n", "12", "1 2\n", "\x00", "+5\n", "05\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		off, err := parseRepairMarker(b)
		if err != nil {
			return
		}
		if off < 0 {
			t.Fatalf("%q accepted as negative offset %d", b, off)
		}
		if n, err := parseRepairMarker([]byte(strconv.FormatInt(off, 10) + "\n")); err != nil || n != off {
			t.Fatalf("%q accepted as %d, which does not read back: %d, %v", b, off, n, err)
		}
	})
}
