package log

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// crashPoints are the sync boundaries a writer passes through: fsyncs of
// segments, indexes and the recovery checkpoint, renames that publish the
// checkpoint, and directory fsyncs. (The clean-shutdown marker is written
// unsynced: closehints.go.)
var crashPoints = func() []string {
	var ps []string
	for _, op := range []string{"segment-sync", "index-sync", "dir-sync", "checkpoint-sync", "checkpoint-rename"} {
		ps = append(ps, "before-"+op, "after-"+op)
	}
	return ps
}()

// maxHitsPerPoint bounds how many occurrences of each point are crashed at;
// the workload passes most points more often than that.
const maxHitsPerPoint = 8

// For every failure point: a writer appends with acks=all semantics
// (Append, then WaitFlushed) across segment rolls and clean restarts, and
// the power fails at that point. Reopened from what survived, the log opens
// and holds every acknowledged batch byte for byte.
func TestAcknowledgedBatchesSurvivePowerLoss(t *testing.T) {
	for _, point := range crashPoints {
		for n := 1; n <= maxHitsPerPoint; n++ {
			reached := false
			t.Run(fmt.Sprintf("%s#%d", point, n), func(t *testing.T) {
				reached = crashCase(t, point, n)
				if !reached && n == 1 {
					t.Fatalf("the workload never reaches %s", point)
				}
			})
			if !reached {
				break
			}
		}
	}
}

func crashCase(t *testing.T, point string, n int) (reached bool) {
	return crashCaseWith(t, point, n, nil)
}

// crashCaseWith is crashCase; between, if set, runs after each
// acknowledged batch.
func crashCaseWith(t *testing.T, point string, n int, between func(*Log)) (reached bool) {
	dir := filepath.Join(t.TempDir(), "p")
	cfs := newCrashFS(t, dir)
	cfs.CrashAt(point, n)
	cfg := fixtureConfig()
	cfg.FS = cfs
	acked := map[int64][]byte{}
	i := 0
	for range 3 { // three runs of the broker, each closed cleanly
		l, _, err := Open(dir, cfg, quietLogger())
		if err != nil {
			break // the power failed while opening
		}
		for range 5 {
			i++
			b := makeBatch(batchOpts{records: 1 + i%3, valueSize: 40 + i})
			res, err := appendAcked(l, b)
			if err != nil {
				break
			}
			acked[res.BaseOffset] = bytes.Clone(b)
			if between != nil {
				between(l)
			}
		}
		l.Close()
	}
	reached = cfs.Crashed()
	if err := cfs.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	l, rep, err := Open(dir, fixtureConfig(), quietLogger())
	if err != nil {
		t.Fatalf("after power loss at %s#%d: %v", point, n, err)
	}
	defer l.Close()
	for base, want := range acked {
		s, err := l.Read(base, 1)
		if err != nil {
			t.Fatalf("power loss at %s#%d: acknowledged batch at offset %d: %v (recovery: %+v)", point, n, base, err, rep)
		}
		if got := readAll(t, s); !bytes.HasPrefix(got, want) {
			t.Fatalf("power loss at %s#%d: acknowledged batch at offset %d lost or changed (log end %d, recovery: %+v)",
				point, n, base, l.LogEndOffset(), rep)
		}
	}
	return reached
}

// A power failure anywhere in a repair leaves a log that the next recovery
// brings to the same end: the damaged batch's offsets gone, every other
// batch there.
func TestRepairSurvivesPowerLoss(t *testing.T) {
	points := []string{"other-sync", "gaps-sync", "gaps-rename", "segment-sync", "segment-rename", "dir-sync"}
	for _, p := range points {
		for _, when := range []string{"before-", "after-"} {
			for n := 1; n <= 3; n++ {
				point := when + p
				reached := false
				t.Run(fmt.Sprintf("%s#%d", point, n), func(t *testing.T) {
					dir := writeFixture(t)
					damageFixture(t, dir)
					makeUnclean(t, dir, false)
					cfs := newCrashFS(t, dir)
					cfs.CrashAt(point, n)
					cfg := fixtureConfig()
					cfg.FS = cfs
					if l, _, err := Open(dir, cfg, quietLogger()); err == nil {
						l.Close()
					}
					if reached = cfs.Crashed(); !reached {
						if n == 1 {
							t.Fatalf("repair never reaches %s", point)
						}
						return
					}
					if err := cfs.PowerLoss(); err != nil {
						t.Fatal(err)
					}
					l, _ := openLog(t, dir, fixtureConfig())
					checkRecovered(t, l, 22, 4, true, [2]int64{8, 10})
				})
				if !reached {
					break
				}
			}
		}
	}
}
