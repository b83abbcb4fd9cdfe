package log

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Closing a released log fsyncs nothing: its data and indexes were made
// durable before the release, and the producer snapshot and clean-shutdown
// marker Close writes are hints (closehints.go). Each used to cost two
// fsyncs, four per partition, which made a clean shutdown of a broker with
// 10,000 idle partitions take 5.5-13.3 s. The next Open still trusts the
// segments and their indexes.
func TestClosingAReleasedLogFsyncsNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	cfs := newCrashFS(t, dir)
	cfg := testConfig()
	cfg.FS = cfs
	l, _, err := Open(dir, cfg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	want := makeBatch(batchOpts{records: 3, pid: 7, epoch: 1})
	mustAppend(t, l, want)
	mustFlush(t, l)
	release(t, l)
	before := fsyncsOf(cfs)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fsyncsOf(cfs) - before; n != 0 {
		t.Fatalf("closing a released log fsynced %d times, want 0", n)
	}
	l2, rep := openLog(t, dir, testConfig())
	if !rep.Clean || rep.IndexesRebuilt != 0 || rep.SegmentsScanned != 0 {
		t.Fatalf("reopened after a clean close: %+v, want clean with nothing scanned or rebuilt", rep)
	}
	if got := readAll(t, mustRead(t, l2, 0)); !bytes.Equal(got, want) {
		t.Fatal("the batch written before the close is lost or changed")
	}
	if res, err := l2.Append(makeBatch(batchOpts{records: 3, pid: 7, epoch: 1})); err != nil || !res.Duplicate {
		t.Fatalf("the producer's retry after the close = %+v, %v; want a duplicate", res, err)
	}
}

// The hints Close writes unsynced may be lost or torn by a power loss
// after it: right after the close (the marker and the snapshot are gone:
// the next Open scans as after a crash), or after the next Open synced the
// directory by removing the marker (the snapshot's name then survives,
// its unsynced content not). Either way every batch is there and the
// producers' retries are still answered as duplicates.
func TestCloseHintsLostToPowerLoss(t *testing.T) {
	for _, released := range []bool{false, true} {
		for _, reopened := range []bool{false, true} {
			t.Run(fmt.Sprintf("released=%v/reopened=%v", released, reopened), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "p-0")
				cfs := newCrashFS(t, dir)
				cfg := rollEveryBatch()
				cfg.FS = cfs
				l, _, err := Open(dir, cfg, quietLogger())
				if err != nil {
					t.Fatal(err)
				}
				orig := appendProducerHistory(t, l)
				mustFlush(t, l)
				if released {
					release(t, l)
				}
				leo := l.LogEndOffset()
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if reopened {
					l2, rep, err := Open(dir, cfg, quietLogger())
					if err != nil {
						t.Fatal(err)
					}
					if !rep.Clean {
						t.Fatalf("reopened at once after a clean close: %+v, want clean", rep)
					}
					crash(l2)
				}
				if err := cfs.PowerLoss(); err != nil {
					t.Fatal(err)
				}
				l3, rep := openLog(t, dir, rollEveryBatch())
				if rep.Clean {
					t.Fatal("the clean-shutdown marker, never synced, survived a power loss")
				}
				if got := l3.LogEndOffset(); got != leo {
					t.Fatalf("log end %d after the power loss, want %d", got, leo)
				}
				for _, i := range []int{5, 9} {
					wantDuplicate(t, l3, i, orig[i])
				}
				for _, f := range snapshotFiles(t, dir) {
					if fi, err := os.Stat(f); err == nil && fi.Size() == 0 {
						t.Errorf("the torn snapshot %s is still there", filepath.Base(f))
					}
				}
			})
		}
	}
}
