package log

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// descriptorsIn counts this process's open descriptors on files in dir.
func descriptorsIn(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// release calls ReleaseFiles and waits for its done.
func release(t testing.TB, l *Log) {
	t.Helper()
	done := make(chan struct{})
	l.ReleaseFiles(func() { close(done) })
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("ReleaseFiles never finished")
	}
}

// An open log gives its descriptors back once clean, without an fsync, and
// takes them again on its next append or read, its index still written as
// it grows: the broker parks idle logs this way instead of closing them
// (about eight fsyncs each) when its partitions outnumber its descriptors.
func TestReleaseFilesKeepsTheLogOpenWithoutDescriptors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	l, _ := openLog(t, dir, testConfig())
	batches := [][]byte{makeBatch(batchOpts{records: 3})}
	offsets := []int64{mustAppend(t, l, batches[0]).BaseOffset}
	mustFlush(t, l)
	if n := descriptorsIn(t, dir); n != 3 {
		t.Fatalf("an open log of one segment holds %d descriptors, want 3 (data, index, reads)", n)
	}
	syncs := l.fsyncs.Load()
	release(t, l)
	if n := descriptorsIn(t, dir); n != 0 {
		t.Fatalf("a released log holds %d descriptors, want 0", n)
	}
	if got := l.fsyncs.Load(); got != syncs {
		t.Fatalf("releasing a clean log fsynced %d files", got-syncs)
	}
	if !bytes.Equal(readAll(t, mustRead(t, l, 0)), batches[0]) {
		t.Fatal("a read after the release returned other bytes")
	}
	// Past the index interval, so the reopened index writer gets an entry.
	for i := range 3 {
		release(t, l)
		b := makeBatch(batchOpts{records: 2, valueSize: 3000 + i})
		batches = append(batches, b)
		offsets = append(offsets, mustAppend(t, l, b).BaseOffset)
		mustFlush(t, l)
	}
	if n := descriptorsIn(t, dir); n != 2 {
		t.Fatalf("after an append a released log holds %d descriptors, want 2 (its writers)", n)
	}
	readAll(t, mustRead(t, l, offsets[len(offsets)-1]))
	if n := descriptorsIn(t, dir); n != 3 {
		t.Fatalf("after a read too it holds %d descriptors, want 3", n)
	}
	release(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, rep := openLog(t, dir, testConfig())
	if !rep.Clean || rep.IndexesRebuilt != 0 {
		t.Fatalf("reopened after a clean close with released files: %+v, want clean with its index whole", rep)
	}
	for i, want := range batches {
		if got := readAll(t, mustRead(t, l2, offsets[i])); !bytes.HasPrefix(got, want) {
			t.Fatalf("batch %d at offset %d lost or changed", i, offsets[i])
		}
	}
}

// A new log is released before anything is written to it: its first
// segment's directory entry, owed an fsync by the first flush with data,
// does not hold the release up. It did, for ever (flushes sync the
// directory only with data), and the partition table's openers waited on
// the descriptors of new logs parked before their first write.
func TestReleaseFilesOfANewLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	l, _ := openLog(t, dir, testConfig())
	release(t, l)
	if n := descriptorsIn(t, dir); n != 0 {
		t.Fatalf("a released new log holds %d descriptors, want 0", n)
	}
	b := makeBatch(batchOpts{})
	mustAppend(t, l, b)
	mustFlush(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, rep := openLog(t, dir, testConfig())
	if !rep.Clean {
		t.Fatalf("reopened after a clean close: %+v, want clean", rep)
	}
	if got := readAll(t, mustRead(t, l2, 0)); !bytes.Equal(got, b) {
		t.Fatal("the batch written after the release is lost or changed")
	}
}

// A log with unflushed data is released by the flush that covers it,
// which ReleaseFiles asks for.
func TestReleaseFilesWaitsForTheFlush(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	l, _ := openLog(t, dir, testConfig()) // never flushes by itself
	mustAppend(t, l, makeBatch(batchOpts{}))
	release(t, l)
	if hw, leo := l.HighWatermark(), l.LogEndOffset(); hw != leo {
		t.Fatalf("released with the high watermark at %d, the log end at %d: released unflushed", hw, leo)
	}
	if n := descriptorsIn(t, dir); n != 0 {
		t.Fatalf("a released log holds %d descriptors, want 0", n)
	}
}

// The power-loss workload of TestAcknowledgedBatchesSurvivePowerLoss with
// the log's files released after every other acknowledged batch: an append
// to a released log, and its flush, are as durable as any, and so is a
// close that keeps the checkpoint a release wrote.
func TestReleasedLogSurvivesPowerLoss(t *testing.T) {
	for _, point := range crashPoints {
		for n := 1; n <= maxHitsPerPoint; n++ {
			reached := false
			t.Run(fmt.Sprintf("%s#%d", point, n), func(t *testing.T) {
				calls := 0
				reached = crashCaseWith(t, point, n, func(l *Log) {
					// Every other batch: some closes find the checkpoint
					// a release wrote, some write their own.
					if calls++; calls%2 == 0 {
						return
					}
					done := make(chan struct{})
					l.ReleaseFiles(func() { close(done) })
					<-done
				})
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

// fsyncsOf counts the fsyncs (of files and directories) cfs has done.
func fsyncsOf(cfs crashFS) int {
	n := 0
	for _, k := range []string{"segment", "index", "dir", "checkpoint", "marker", "gaps", "other"} {
		n += cfs.Hits("before-" + k + "-sync")
	}
	return n
}

// A released log killed with the process recovers without an fsync: the
// release brought its recovery checkpoint to the log end, and nothing past
// it needs making durable. Before, each of the thousands of idle logs a
// killed broker had open cost about four fsyncs to recover (10,000
// partitions: 40 s before the broker listened). A log with data past its
// checkpoint still makes it durable.
func TestReleasedLogRecoversWithoutFsyncs(t *testing.T) {
	for _, released := range []bool{true, false} {
		t.Run(fmt.Sprintf("released=%v", released), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p-0")
			cfs := newCrashFS(t, dir)
			cfg := testConfig()
			cfg.FS = cfs
			l, _, err := Open(dir, cfg, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			var want [][]byte
			for i := range 3 {
				b := makeBatch(batchOpts{records: 2, valueSize: 100 + i})
				want = append(want, b)
				mustAppend(t, l, b)
				mustFlush(t, l) // within checkpointEvery: the checkpoint stays behind
			}
			if released {
				release(t, l)
			}
			crash(l)
			before := fsyncsOf(cfs)
			l2, rep, err := Open(dir, cfg, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if rep.Clean {
				t.Fatal("a killed log opened as cleanly closed")
			}
			n := fsyncsOf(cfs) - before
			if released && n != 0 {
				t.Fatalf("recovering a released log fsynced %d times, want 0", n)
			}
			if !released && n == 0 {
				t.Fatal("recovering a log with data past its checkpoint fsynced nothing")
			}
			got := readAll(t, mustRead(t, l2, 0))
			for i, b := range want {
				if !bytes.Contains(got, b) {
					t.Fatalf("batch %d lost", i)
				}
			}
		})
	}
}
