package main_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A byte flipped in the middle of a partition costs the batch holding it
// and nothing else: after an unclean restart (recovery) and after a clean
// one (the scrubber), a kgo consumer reads every other record, and `log
// verify` reports the damage before the repair and none after.
func TestDamagedBatchCostsThatBatchOnly(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	for _, mode := range []string{"unclean restart", "clean restart and scrubber"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			small := func(c *broker.Config) {
				c.Log.SegmentBytes = 2000
				if mode != "unclean restart" {
					c.Log.ScrubInterval = 10 * time.Millisecond
				}
			}
			b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(small))
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.AllowAutoTopicCreation())
			if err != nil {
				t.Fatal(err)
			}
			const batches, perBatch = 30, 10
			for i := range batches {
				testenv.ProduceRange(t, cl, "events", i*perBatch, (i+1)*perBatch)
			}
			cl.Close()
			b.Stop()

			part := filepath.Join(dir, "events-0")
			out := testenv.Run(t, "", 0, "log", "verify", "--data-dir", dir)
			if !strings.Contains(out, "events-0: ") || !strings.Contains(out, "1 partition(s) checked, 0 damaged") {
				t.Fatalf("verify of the clean directory:\n%s", out)
			}
			segFile, first, next := flipMiddleBatch(t, part)
			out = testenv.Run(t, "", 1, "log", "verify", "--data-dir", dir)
			t.Logf("tributary log verify on the damaged directory:\n%s", out)
			want := "offsets [" + strconv.FormatInt(first, 10) + ", " + strconv.FormatInt(next, 10) + ")"
			if !strings.Contains(out, filepath.Base(segFile)) || !strings.Contains(out, want) || !strings.Contains(out, "crc mismatch") {
				t.Fatalf("verify does not name %s %s:\n%s", filepath.Base(segFile), want, out)
			}
			if mode == "unclean restart" {
				os.Remove(filepath.Join(part, ".clean-shutdown"))
				os.Remove(filepath.Join(part, "recovery-checkpoint"))
			}

			b = testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(small))
			got := consumeAll(t, b.Addr, batches*perBatch-int(next-first))
			for i := 0; i < batches*perBatch; i++ {
				_, ok := got[int64(i)]
				if lost := int64(i) >= first && int64(i) < next; ok == lost {
					t.Fatalf("offset %d: consumed %v, lost range [%d, %d)", i, ok, first, next)
				}
				if ok && got[int64(i)] != strconv.Itoa(i) {
					t.Fatalf("offset %d holds %q", i, got[int64(i)])
				}
			}
			b.Stop()
			q, _ := filepath.Glob(segFile + ".quarantine-*")
			if len(q) != 1 {
				t.Fatalf("quarantine files %v, want one", q)
			}
			out = testenv.Run(t, "", 0, "log", "verify", "--data-dir", dir)
			t.Logf("tributary log verify after the repair:\n%s", out)
		})
	}
}

// flipMiddleBatch flips a byte inside the records of the middle batch of
// the middle segment of a partition and returns the segment file and the
// offsets [first, next) of that batch.
func flipMiddleBatch(t *testing.T, part string) (seg string, first, next int64) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(part, "*.log"))
	sort.Strings(segs)
	if len(segs) < 3 {
		t.Fatalf("%d segments: the test wants several", len(segs))
	}
	seg = segs[len(segs)/2]
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int
	for pos := 0; pos < len(b); pos += 12 + int(binary.BigEndian.Uint32(b[pos+8:])) {
		starts = append(starts, pos)
	}
	if len(starts) < 3 {
		t.Fatalf("%d batches in %s: the test wants several", len(starts), seg)
	}
	pos := starts[len(starts)/2]
	first = int64(binary.BigEndian.Uint64(b[pos:]))
	next = first + int64(binary.BigEndian.Uint32(b[pos+23:])) + 1
	b[pos+70] ^= 0x40
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return seg, first, next
}

// consumeAll reads partition 0 of "events" from the start until it has n
// records, and returns them by offset.
func consumeAll(t *testing.T, addr string, n int) map[int64]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := map[int64]string{}
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records; fetch errors: %v", len(got), n, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = string(r.Value) })
	}
	return got
}

// `log verify` shows its progress on stderr (here forced, as on a
// terminal) and ends the line with the total, while stdout keeps only the
// report that scripts read.
func TestLogVerifyShowsProgress(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	testenv.ProduceRange(t, cl, "clicks", 0, 10)
	testenv.ProduceRange(t, cl, "views", 0, 10)
	cl.Close()
	b.Stop()

	t.Setenv("TRIBUTARY_PROGRESS", "always")
	out, stderr := testenv.RunBoth(t, "", 0, "log", "verify", "--data-dir", dir)
	if !strings.Contains(stderr, "verified 2/2 partitions") || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("progress on stderr: %q", stderr)
	}
	if strings.Contains(out, "\x1b") || !strings.Contains(out, "2 partition(s) checked, 0 damaged") {
		t.Errorf("report on stdout: %q", out)
	}
}
