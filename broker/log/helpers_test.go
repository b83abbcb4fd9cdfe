package log

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/recordbatch"

	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// batchOpts describes a test batch; the zero value is one 10-byte record
// from a non-idempotent producer with timestamp 1000.
type batchOpts struct {
	records   int
	valueSize int
	ts        int64
	pid       int64 // 0 means -1 (not idempotent)
	epoch     int16
	seq       int32
}

// makeBatch builds a valid RecordBatch v2 with kmsg, fixing up length and
// CRC32C as a producer would.
func makeBatch(o batchOpts) []byte {
	if o.records == 0 {
		o.records = 1
	}
	if o.valueSize == 0 {
		o.valueSize = 10
	}
	if o.ts == 0 {
		o.ts = 1000
	}
	rb := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(o.records - 1),
		FirstTimestamp:  o.ts,
		MaxTimestamp:    o.ts,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(o.records),
	}
	if o.pid != 0 {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = o.pid, o.epoch, o.seq
	}
	value := bytes.Repeat([]byte{'v'}, o.valueSize)
	for i := 0; i < o.records; i++ {
		rec := kmsg.Record{OffsetDelta: int32(i), Value: value}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		rb.Records = rec.AppendTo(rb.Records)
	}
	return rbtest.FixBatch(rb.AppendTo(nil))
}

// fakeClock is a settable Config.Clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig never flushes by itself, so tests decide when data is flushed.
func testConfig() Config {
	return Config{IntervalFlush: true, FlushInterval: time.Hour, FlushMessages: 1 << 40, RetentionCheckInterval: time.Hour}
}

func openLog(t testing.TB, dir string, cfg Config) (*Log, RecoveryReport) {
	t.Helper()
	l, rep, err := Open(dir, cfg, quietLogger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l, rep
}

// appendAcked appends b and waits for the flush that covers it, as an
// acks=all request does.
func appendAcked(l *Log, b []byte) (AppendResult, error) {
	res, err := l.Append(b)
	if err != nil {
		return res, err
	}
	return res, l.WaitFlushed(context.Background(), res.LastOffset)
}

func mustAppend(t testing.TB, l *Log, b []byte) AppendResult {
	t.Helper()
	res, err := l.Append(b)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

func mustFlush(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// crash stops l as a killed process would: no flush, no checkpoint, no
// clean-shutdown marker. Bytes written stay in the files (the page cache
// survives a process crash).
func crash(l *Log) {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	close(l.done)
	l.wg.Wait()
	l.mu.Lock()
	for _, s := range l.segs {
		s.close()
	}
	l.mu.Unlock()
}

// readAll returns the bytes of a Slice and releases it.
func readAll(t testing.TB, s Slice) []byte {
	t.Helper()
	defer s.Release()
	if s.Size == 0 {
		return nil
	}
	b := make([]byte, s.Size)
	if _, err := s.File.ReadAt(b, s.Pos); err != nil {
		t.Fatalf("reading slice: %v", err)
	}
	return b
}

// batchesIn splits whole batches and returns their headers.
func batchesIn(t testing.TB, b []byte) []recordbatch.Header {
	t.Helper()
	var hs []recordbatch.Header
	for len(b) > 0 {
		if len(b) < recordbatch.HeaderSize {
			t.Fatalf("%d trailing bytes are not a batch", len(b))
		}
		h := recordbatch.ParseHeader(b)
		if h.Size() > int64(len(b)) {
			t.Fatalf("batch of %d bytes cut at %d", h.Size(), len(b))
		}
		if _, err := recordbatch.Validate(b[:h.Size()], DefaultMaxDecompressedBytes); err != nil {
			t.Fatalf("batch in slice: %v", err)
		}
		hs = append(hs, h)
		b = b[h.Size():]
	}
	return hs
}

func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// makeUnclean removes the clean-shutdown marker a Close wrote, so the next
// Open recovers as after a crash; withCheckpoint false also removes the
// recovery checkpoint, so every segment is scanned.
func makeUnclean(t testing.TB, dir string, withCheckpoint bool) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, cleanMarkerFile)); err != nil {
		t.Fatal(err)
	}
	if !withCheckpoint {
		if err := os.Remove(filepath.Join(dir, checkpointFile)); err != nil {
			t.Fatal(err)
		}
	}
}
