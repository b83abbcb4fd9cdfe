package loader_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// A broker that serves a damaged record batch mid-topic fails the run with
// the topic, partition and offset of the batch, and the run commits
// nothing, not even the partitions that read well: loading the records
// around the damage would hide it. Once the segment is repaired, the next
// run loads every record exactly once.
//
// The damage is made where a broker cannot see it: a flipped bit in a
// record's value, inside a sealed segment of a running broker, which
// serves the segment's bytes as they lie on disk. The topic stores its
// batches uncompressed, so the only thing that can tell is the batch's
// CRC32C: without its check the run would load an altered value.
func TestDamagedBatchFailsTheRun(t *testing.T) {
	env := loadertest.Start(t)
	const topic = "damaged"
	env.CreateTopic(t, topic, 2, "segment.bytes=65536", "compression.type=uncompressed")
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	events := loadertest.PageViews(0, 6000, 2, from, time.Hour)
	for i := 0; i < len(events); i += 200 { // many batches a segment
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[i:i+200])
	}

	pos, orig, first := flipValueByte(t, filepath.Join(env.Broker.DataDir, topic+"-0"))
	url := "file://" + t.TempDir()
	cfg := config(env, url, topic)
	sum, err := loader.Run(context.Background(), cfg)
	want := fmt.Sprintf("%s/0: record batch at offset %d: CRC32C does not match", topic, first)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("run over a damaged batch: %v; want an error saying %q", err, want)
	}
	if sum != nil && sum.Committed {
		t.Fatal("the failed run committed")
	}
	if c := loadertest.Read(t, openWarehouse(t, url)); len(c.Files)+len(c.Errors)+len(c.State) > 0 {
		t.Fatalf("the failed run left %d files, %d error records, state %v", len(c.Files), len(c.Errors), c.State)
	}

	writeByte(t, pos.file, pos.at, orig) // the operator's repair
	if sum := run(t, cfg); sum.Records != int64(len(events)) {
		t.Fatalf("the run after the repair loaded %d records, want %d", sum.Records, len(events))
	}
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, openWarehouse(t, url)), topic, events)
}

type bytePos struct {
	file string
	at   int64
}

// flipValueByte flips a bit inside the last record's value of the middle
// batch of the middle sealed segment of a partition directory, in place,
// and returns where, the byte as it was and the batch's base offset.
func flipValueByte(t *testing.T, dir string) (pos bytePos, orig byte, first int64) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(segs)
	if len(segs) < 3 {
		t.Fatalf("%d segments in %s: the test wants several", len(segs), dir)
	}
	seg := segs[len(segs)/2] // neither the first nor the active one
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int
	for p := 0; p+12 <= len(b); p += 12 + int(binary.BigEndian.Uint32(b[p+8:])) {
		starts = append(starts, p)
	}
	if len(starts) < 3 {
		t.Fatalf("%d batches in %s: the test wants several", len(starts), seg)
	}
	start := starts[len(starts)/2]
	end := start + 12 + int(binary.BigEndian.Uint32(b[start+8:]))
	if b[start+21]&0x07 != 0 {
		t.Fatalf("the batch at byte %d of %s is compressed; the topic should store batches uncompressed", start, seg)
	}
	// The record ends with its header count (0) and the value with
	// durationMs and locale "en_US": 5 bytes from the end lies in the
	// locale, where a flipped bit still decodes.
	at := end - 5
	if b[at] < 'A' || b[at] > 'z' {
		t.Fatalf("byte %d of %s is %#x, not inside the locale string the test expects", at, seg, b[at])
	}
	writeByte(t, seg, int64(at), b[at]^0x01)
	return bytePos{seg, int64(at)}, b[at], int64(binary.BigEndian.Uint64(b[start:]))
}

func writeByte(t *testing.T, file string, at int64, v byte) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{v}, at); err != nil {
		t.Fatal(err)
	}
}

// When the log start moves past a partition's fetch position while a run
// reads it (retention, or DeleteRecords as here), the broker answers
// OFFSET_OUT_OF_RANGE; the run reports the exact range lost in its
// summary, goes on from the new log start, and loads every remaining
// record once.
func TestLogStartMovesMidRun(t *testing.T) {
	env := loadertest.Start(t)
	const topic = "trimmed"
	// Uncompressed, so that one fetch (1 MiB a partition) cannot hold
	// every record.
	env.CreateTopic(t, topic, 1, "compression.type=uncompressed")
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	events := loadertest.PageViews(0, 30_000, 1, from, time.Hour)
	env.Produce(t, topic, loadertest.Schema(t, "pageview"), events)
	const newStart = 25_000

	url := "file://" + t.TempDir()
	cfg := config(env, url, topic)
	var once sync.Once
	var trimErr error
	cfg.Fault = func(p loader.FaultPoint) error {
		if p == loader.FaultMidFetch { // the first fetch's records are in
			once.Do(func() {
				var offs kadm.Offsets
				offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: newStart})
				resp, err := env.Admin.DeleteRecords(context.Background(), offs)
				if err == nil {
					err = resp.Error()
				}
				trimErr = err
			})
		}
		return nil
	}
	sum := run(t, cfg)
	t.Logf("summary: %d records, lost %v", sum.Records, sum.Lost)
	if trimErr != nil {
		t.Fatalf("deleting records below %d: %v", newStart, trimErr)
	}
	if len(sum.Lost) != 1 {
		t.Fatalf("lost %+v, want one range of %s/0 ending at %d", sum.Lost, topic, newStart-1)
	}
	l := sum.Lost[0]
	if l.Topic != topic || l.Partition != 0 || l.From <= 0 || l.From >= newStart || l.To != newStart-1 {
		t.Fatalf("lost %+v, want %s/0 from where the first fetch ended to %d", l, topic, newStart-1)
	}
	// The loader cannot tell retention from DeleteRecords: the reason must
	// not blame retention alone.
	if !strings.Contains(l.Reason, "DeleteRecords") {
		t.Errorf("lost range's reason %q does not allow for DeleteRecords", l.Reason)
	}
	if want := l.From + int64(len(events)-newStart); sum.Records != want {
		t.Errorf("loaded %d records, want %d (the first fetch's and those from the new log start)", sum.Records, want)
	}
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, openWarehouse(t, url)), topic, slices.Concat(events[:l.From], events[newStart:]))

	if sum := run(t, cfg); sum.Records != 0 || len(sum.Lost) != 0 {
		t.Fatalf("the run after: %d records, lost %v; want nothing", sum.Records, sum.Lost)
	}
}
