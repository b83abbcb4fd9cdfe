package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestRetentionMovesLogStart: with per-topic retention.ms and small
// segments, segments whose records are older than the retention are
// deleted, ListOffsets earliest moves past them, a fetch below it gets
// OFFSET_OUT_OF_RANGE and a consumer from the start reads what is left.
func TestRetentionMovesLogStart(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.Log.RetentionCheckInterval = 50 * time.Millisecond
	}))
	retention, segment := "600000", "1024" // 10 minutes; one ~650-byte batch per segment
	createTopic(t, b.Addr, "short-lived", 1, map[string]*string{"retention.ms": &retention, "segment.bytes": &segment})
	w := dial(t, b.Addr)
	old := time.Now().Add(-time.Hour)
	for i := range 10 {
		at := time.Now()
		if i < 5 {
			at = old // the first five batches are past retention on arrival
		}
		batch := makeBatchAt(at, -1, -1, -1, strings.Repeat(strconv.Itoa(i), 600))
		wantCode(t, "produce", produceResult(w.roundTrip(produceRequest(9, -1, "short-lived", 0, batch))).ErrorCode, nil)
	}
	testenv.Eventually(t, 30*time.Second, "log start 5 after retention: exactly the five old segments go", func() bool {
		return listOffset(t, w, "short-lived", 0, -2) == 5
	})
	if latest := listOffset(t, w, "short-lived", 0, -1); latest != 10 {
		t.Fatalf("latest offset %d after retention, want 10 (retention never moves the end)", latest)
	}
	fr := w.roundTrip(fetchRequest(11, "short-lived", 0, 0)).(*kmsg.FetchResponse)
	wantCode(t, "fetch below the log start", fr.Topics[0].Partitions[0].ErrorCode, errOffsetOutOfRange)
	if got := fr.Topics[0].Partitions[0].LogStartOffset; got != 5 {
		t.Fatalf("fetch reports log start %d, want 5", got)
	}
	got := consumeAll(t, b.Addr, "short-lived", 5)[0]
	if got[0].Offset != 5 || got[0].Value[0] != '5' {
		t.Fatalf("consumer from the start began at offset %d (%q), want offset 5", got[0].Offset, got[0].Value[:1])
	}
}

// TestCorruptSegmentAfterCrash flips a byte in the middle of a partition's
// data, as a failing disk would, and restarts the broker as after a crash:
// recovery quarantines the corrupt batch, says so in the log, and every
// other batch, before and after it, is still served.
func TestCorruptSegmentAfterCrash(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	createTopic(t, b.Addr, "fragile", 1, nil)
	w := dial(t, b.Addr)
	var sizes []int64
	for i := range 10 {
		batch := makeBatch(-1, -1, -1, "record "+strconv.Itoa(i))
		sizes = append(sizes, int64(len(batch)))
		wantCode(t, "produce", produceResult(w.roundTrip(produceRequest(9, -1, "fragile", 0, batch))).ErrorCode, nil)
	}
	b.Stop()

	partDir := filepath.Join(dir, "fragile-0")
	segs, _ := filepath.Glob(filepath.Join(partDir, "*.log"))
	if len(segs) != 1 {
		t.Fatalf("want one segment, found %v", segs)
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	var pos int64
	for _, s := range sizes[:6] {
		pos += s
	}
	data[pos+sizes[6]-1] ^= 0xff // last byte of batch 6, inside its CRC range
	if err := os.WriteFile(segs[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	// As after kill -9: no clean-shutdown marker, no checkpoint to trust.
	os.Remove(filepath.Join(partDir, ".clean-shutdown"))
	os.Remove(filepath.Join(partDir, "recovery-checkpoint"))

	logs := &logBuffer{}
	b2 := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.Logger = logs.logger()
	}))
	if !strings.Contains(logs.String(), "offsets lost") {
		t.Fatalf("recovery did not report the lost batch:\n%s", logs.String())
	}
	w2 := dial(t, b2.Addr)
	if end := listOffset(t, w2, "fragile", 0, -1); end != 10 {
		t.Fatalf("log end %d after recovery, want 10 (only batch 6 quarantined)", end)
	}
	got := consumeAll(t, b2.Addr, "fragile", 9)[0]
	for _, r := range got {
		if r.Offset == 6 || string(r.Value) != "record "+strconv.Itoa(int(r.Offset)) {
			t.Fatalf("offset %d holds %q", r.Offset, r.Value)
		}
	}
	// The partition takes new data after the repair.
	prod := newClient(t, b2.Addr, kgo.DefaultProduceTopic("fragile"))
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
