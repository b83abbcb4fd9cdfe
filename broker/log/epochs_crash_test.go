package log

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// A replica that restarted (broker epochs, cluster/brokerepochs.go)
// follows a new leader: it copies batches of the new leader epoch, and,
// re-elected alone, leads in an epoch of its own. A power loss at any step
// of that leaves a leader-epoch cache that agrees with the batches the log
// kept: every kept batch's epoch is the cache's epoch at its offset, no
// epoch starts past the log end, and the kept records are a prefix of
// those written. OffsetForLeaderEpoch answers from this cache, so a cache
// that claimed records the power loss took would make a follower keep
// records its leader does not hold, or cut ones it does.
func TestLeaderEpochsSurvivePowerLoss(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 400
	build := func(dir string) { // offsets 0-9 in epoch 1, closed cleanly
		l, _ := openLog(t, dir, cfg)
		if err := l.AssignLeaderEpoch(1); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			mustAppend(t, l, makeBatch(batchOpts{records: 2}))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// replicated is a batch of two records the leader wrote at base in
	// epoch: both fields lie outside the CRC.
	replicated := func(base int64, epoch int32) []byte {
		b := makeBatch(batchOpts{records: 2})
		binary.BigEndian.PutUint64(b[recordbatch.OffBaseOffset:], uint64(base))
		binary.BigEndian.PutUint32(b[recordbatch.OffLeaderEpoch:], uint32(epoch))
		return b
	}
	for n := 0; ; n++ {
		dir := t.TempDir()
		build(dir)
		cfs := newCrashFS(t, dir)
		ccfg := cfg
		ccfg.FS = cfs
		l, _, err := Open(dir, ccfg, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		cfs.CrashAfter(n)
		// Copying the leader's epochs 2, 3 and 4 (the cache learns each
		// before the batch is fsynced), then leading in epoch 5; the
		// steps after a power loss fail, as they would.
		var errs []error
		for i, epoch := range []int32{2, 2, 3, 4} {
			_, err := l.AppendReplica([][]byte{replicated(10+2*int64(i), epoch)})
			errs = append(errs, err)
		}
		errs = append(errs, l.Flush(), l.AssignLeaderEpoch(5))
		for range 4 {
			_, err := l.Append(makeBatch(batchOpts{records: 2}))
			errs = append(errs, err)
		}
		errs = append(errs, l.Flush())
		done := !cfs.Crashed()
		for _, err := range errs {
			if done && err != nil {
				t.Fatalf("without a power loss: %v", err)
			}
		}
		crash(l)
		if err := cfs.PowerLoss(); err != nil {
			t.Fatal(err)
		}

		l2, _ := openLog(t, dir, cfg)
		end, epochs := l2.LogEndOffset(), epochsOf(l2)
		batches := batchEpochs(t, dir)
		next := int64(0)
		for _, b := range batches {
			if b.base != next {
				t.Fatalf("power loss after %d steps: batch at %d follows offset %d: the kept records are not a prefix", n, b.base, next-1)
			}
			next = b.base + 2
			if got := cacheEpochAt(epochs, b.base); got != b.epoch {
				t.Fatalf("power loss after %d steps: the batch at %d carries epoch %d, the cache %v says %d", n, b.base, b.epoch, epochs, got)
			}
		}
		if next != end {
			t.Fatalf("power loss after %d steps: batches end at %d, the log at %d", n, next, end)
		}
		for _, e := range epochs {
			if e.start > end {
				t.Fatalf("power loss after %d steps: epoch %d starts at %d, past the log end %d (cache %v)", n, e.epoch, e.start, end, epochs)
			}
		}
		if latest := l2.LatestEpoch(); latest >= 0 {
			if e, off := l2.EndOffsetForEpoch(latest); e != latest || off != end {
				t.Fatalf("power loss after %d steps: latest epoch %d ends at (%d, %d), want the log end %d", n, latest, e, off, end)
			}
		}
		l2.Close()
		if done {
			if end != 26 || l2.LatestEpoch() != 5 || n < 10 {
				t.Fatalf("finished in %d steps: log end %d, latest epoch %d; want 26 and 5, over at least 10 steps", n, end, l2.LatestEpoch())
			}
			return
		}
	}
}

type batchEpoch struct {
	base  int64
	epoch int32
}

// batchEpochs reads the base offset and leader epoch of every batch in
// dir's segment files, in offset order.
func batchEpochs(t *testing.T, dir string) []batchEpoch {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []batchEpoch
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) >= recordbatch.OffMagic {
			n := int(binary.BigEndian.Uint32(data[recordbatch.OffLength:]))
			if 12+n > len(data) {
				t.Fatalf("%s: a torn batch after recovery", f)
			}
			out = append(out, batchEpoch{int64(binary.BigEndian.Uint64(data[recordbatch.OffBaseOffset:])), int32(binary.BigEndian.Uint32(data[recordbatch.OffLeaderEpoch:]))})
			data = data[12+n:]
		}
	}
	return out
}

// cacheEpochAt is the epoch the cache gives offset o: the last entry
// starting at or before it (-1 none).
func cacheEpochAt(epochs []epochEntry, o int64) int32 {
	epoch := int32(-1)
	for _, e := range epochs {
		if e.start <= o {
			epoch = e.epoch
		}
	}
	return epoch
}
