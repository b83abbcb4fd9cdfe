package broker_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestBitRotInOldSegmentAfterCleanRestart: a byte flipped in an old,
// fsynced, sealed segment while the broker was stopped, cleanly or as by
// kill -9. Recovery does not scan after a clean shutdown, nor below its
// checkpoint after a crash, and the scrubber is off by default; before, a
// consumer stopped at the damaged batch ("crc does not match") and never
// saw a later record. Now the first read of that stretch quarantines the
// batch, says so, counts it, and every other record is served.
func TestBitRotInOldSegmentAfterCleanRestart(t *testing.T) {
	for _, stop := range []string{"clean", "kill -9"} {
		t.Run(stop, func(t *testing.T) { bitRotAfterRestart(t, stop == "clean") })
	}
}

func bitRotAfterRestart(t *testing.T, clean bool) {
	dir := t.TempDir()
	small := testenv.WithConfig(func(c *broker.Config) { c.Log.SegmentBytes = 300 }) // a few batches a segment
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), small)
	createTopic(t, b.Addr, "aging", 1, nil)
	w := dial(t, b.Addr)
	for i := range 20 {
		batch := makeBatch(-1, -1, -1, "record "+strconv.Itoa(i))
		wantCode(t, "produce", produceResult(w.roundTrip(produceRequest(9, -1, "aging", 0, batch))).ErrorCode, nil)
	}
	b.Stop()
	seg := flipLastByteOfBatch(t, filepath.Join(dir, "aging-0"), 6)
	if _, err := os.Stat(filepath.Join(dir, "aging-0", ".clean-shutdown")); err != nil {
		t.Fatalf("the broker did not stop cleanly: %v", err)
	}
	if !clean {
		// As after kill -9 once everything was flushed: no clean-shutdown
		// marker, and a recovery checkpoint past the damaged segment.
		os.Remove(filepath.Join(dir, "aging-0", ".clean-shutdown"))
	}

	logs := &logBuffer{}
	b2 := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.Log.SegmentBytes = 300
		c.Logger = logs.logger()
	}))
	got := consumeAll(t, b2.Addr, "aging", 19)[0]
	for _, r := range got {
		if r.Offset == 6 || string(r.Value) != "record "+strconv.Itoa(int(r.Offset)) {
			t.Fatalf("offset %d holds %q", r.Offset, r.Value)
		}
	}
	if !strings.Contains(logs.String(), "offsets lost") || !strings.Contains(logs.String(), filepath.Base(seg)) {
		t.Fatalf("the quarantine was not logged with its segment:\n%s", logs.String())
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(b2.Metrics())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"tributary_log_quarantined_ranges_total": 1, "tributary_log_quarantined_offsets_total": 1}
	for _, f := range fams {
		if v, ok := want[f.GetName()]; ok {
			if got := f.GetMetric()[0].GetCounter().GetValue(); got != v {
				t.Errorf("%s = %v, want %v", f.GetName(), got, v)
			}
			delete(want, f.GetName())
		}
	}
	if len(want) > 0 {
		t.Errorf("metrics missing: %v", want)
	}
}

// flipLastByteOfBatch flips the last byte (inside its CRC's range) of the
// batch holding offset in the partition directory dir, and returns the
// segment file it was in.
func flipLastByteOfBatch(t *testing.T, dir string, offset int64) string {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(segs)
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		for pos := 0; pos+61 <= len(data); {
			base := int64(binary.BigEndian.Uint64(data[pos:]))
			size := 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
			last := base + int64(binary.BigEndian.Uint32(data[pos+23:]))
			if base <= offset && offset <= last {
				// In place, as rot would: rewriting the whole file would
				// truncate it first, and a scrub reading it meanwhile
				// would rightly find every batch after the cut missing.
				f, err := os.OpenFile(seg, os.O_WRONLY, 0)
				if err == nil {
					_, err = f.WriteAt([]byte{data[pos+size-1] ^ 0xff}, int64(pos+size-1))
					err = errors.Join(err, f.Close())
				}
				if err != nil {
					t.Fatal(err)
				}
				return seg
			}
			pos += size
		}
	}
	t.Fatalf("no batch holds offset %d in %s", offset, dir)
	return ""
}
